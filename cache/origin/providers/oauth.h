/*
 * oauth.h - OAuth2 requests, for every provider whose credentials come
 * from an identity endpoint: what an OAuth2 token endpoint answers
 * (access_token and expires_in or expires_on, as a number or a numeric
 * string), one bounded request to an identity endpoint of any cloud (AWS's
 * too: STS, the instance metadata service), and the start of a bearer
 * token's renewal, which renewal.h then renews.
 *
 * Layer: the origin's providers (cache/origin/providers/), below the
 * providers that use it; calls renewal.c; over cache/origin/ and
 * cache/base/.
 */
#ifndef TILEFS_OAUTH_H
#define TILEFS_OAUTH_H

#include "cache/origin/http.h"
#include "cache/origin/providers/renewal.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define OAUTH_TOKEN_MAX 8192		/* an access token (Entra's JWTs: ~2-3 KB) */
#define OAUTH_ENDPOINT_MAX_BODY (32 * 1024)	/* an endpoint's answer, at most */
#define OAUTH_MAX_LIFETIME (366 * 86400)	/* an expires_in beyond: bad input */

#define OAUTH_PRINCIPAL_LEN 64	/* hex digits of a principal's name */

/* A bearer token: the credential of the OAuth2 providers. */
struct oauth_token {
	char access_token[OAUTH_TOKEN_MAX];	/* NUL-terminated, printable */
	/* Whom the token speaks for, set by the fetch (oauth_principal_set()):
	 * "" until it is, which no identity takes for a name. */
	char principal[OAUTH_PRINCIPAL_LEN + 1];
};

/*
 * Name T's principal: SHA-256, in hex, of KIND and PARTS (N strings), each
 * whole (no length cut can make two principals one; a part may be a
 * secret, such as a refresh token, as it is never kept but hashed).
 * -ENOMEM, else 0.
 */
int oauth_principal_set(struct oauth_token *t, const char *kind, const char *const *parts,
			size_t n);

/*
 * Name T's principal from its access token's own claims, when it is a JWT
 * (three base64url parts, the middle one a JSON object) naming a tenant
 * ("tid") and an object ("oid", else "appid"), as Microsoft Entra ID's
 * tokens do: the principal the service will see. 0, or -ENOENT when the
 * token says none (T unchanged).
 */
int oauth_jwt_principal(struct oauth_token *t);

/*
 * "SUBJECT principal HEX" of the bearer token R signs with now into OUT
 * (SIZE bytes), for source_identity_hash(): 0, or -EACCES when R has no
 * token at hand (expired, not renewed) or its token names no principal.
 */
int oauth_renewal_principal(struct renewal *r, const char *subject, char *out, size_t size);

/*
 * May a secret (a client secret, a refresh token, an assertion) go to
 * URL? https, or http to a loopback host (127.0.0.0/8 written as four
 * numbers, localhost, [::1]), as curl's URL parser reads the host (so
 * "http://127.0.0.1.example/" and "http://127.0.0.1@example/" are not
 * loopback), and no user name in it.
 */
bool oauth_url_safe(const char *url);

/*
 * renewal_init() of bearer tokens (struct oauth_token) for a source whose
 * requests go to URL: a token crosses the network only encrypted, so not
 * for an http:// URL. 0 (R set up, as from renewal_init(); release with
 * renewal_release()); -ENOMEM; else -EACCES with why no token was had in
 * WHY (WHY_SIZE).
 */
int oauth_bearer_start(struct renewal *r, const char *subject, renewal_fetch_fn fetch,
		       void *arg, const char *url, char *why, size_t why_size);

/*
 * An OAuth2 token answer (JSON: access_token; expires_in seconds, or
 * expires_on seconds since the epoch; as numbers or numeric strings) read
 * at NOW into OUT and *expires. 0, or -EIO when the token is missing, too
 * long or not printable, or the expiry is missing or out of range.
 */
int oauth_token_from_json(const char *text, size_t len, time_t now, struct oauth_token *out,
			  time_t *expires);

/* A bounded answer of an identity endpoint. */
struct oauth_body {
	char text[OAUTH_ENDPOINT_MAX_BODY];	/* NUL-terminated */
	size_t len;
	bool answers_challenge;		/* in: the caller answers a 401's
					   challenge itself (not logged) */
	char challenge[160];		/* out: a 401's WWW-Authenticate, or "" */
	long status;			/* out: the HTTP status, 0 when none */
};

/*
 * One request to an identity endpoint (of any cloud): METHOD (NULL: GET,
 * or POST with a FORM) of URL with the header lines of HEADERS
 * (NULL-terminated array; may be NULL) and, when FORM is not NULL, that
 * www-form-urlencoded body (it may hold a secret: never logged); one
 * attempt, 1 s to connect, 5 s in all. 0 and OUT when it answers 200;
 * -EACCES for another status (a 401's challenge in OUT); else the transport's -errno, the failure
 * logged (warn) with NAME and URL without its query.
 */
int oauth_endpoint_call(const char *url, const char *name, const char *method,
			const char *const *headers, const char *form, struct oauth_body *out);
/* The same, each attempt signed by SIGN(SIGNER, ...) (see http.h) instead
 * of given HEADERS: a signed STS request, say. */
int oauth_endpoint_call_signed(const char *url, const char *name, const char *method,
			       const char *form, http_sign_fn sign, void *signer,
			       struct oauth_body *out);

#endif
