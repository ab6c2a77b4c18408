/*
 * aws_sso.h - credentials of an AWS profile that signs in with IAM
 * Identity Center (SSO), as the AWS CLI writes one: sso_account_id and
 * sso_role_name, with sso_session naming an [sso-session NAME] section
 * (sso_start_url, sso_region), or, in a legacy profile, sso_start_url and
 * sso_region in the profile itself.
 *
 * The sign-in is the AWS CLI's (`aws sso login`): tilefs reads the access
 * token it left in ~/.aws/sso/cache/HEX.json (HEX the SHA-1 of the
 * session's name, or of the start URL for a legacy profile; accessToken,
 * expiresAt), again at each fetch, so that a new login during a mount is
 * taken up, and asks the SSO portal for the role's keys: GET
 * PORTAL/federation/credentials?role_name=R&account_id=A with the header
 * x-amz-sso_bearer_token, answered {"roleCredentials": {accessKeyId,
 * secretAccessKey, sessionToken, expiration (ms since the epoch)}}. The
 * portal: AWS_ENDPOINT_URL_SSO, else https://portal.sso.REGION.amazonaws.com
 * (the token goes only to https, or to a loopback address).
 *
 * Left out: refreshing the token through SSO OIDC (CreateToken with the
 * cached refreshToken) as the SDKs do for sso_session profiles: tilefs
 * never writes the CLI's cache. A token that has expired, or is missing,
 * fails the fetch with -EKEYEXPIRED and a log line saying to run
 * `aws sso login`.
 *
 * Layer: the origin's providers (cache/origin/providers/), private to the
 * S3 provider; calls aws_config.c and aws_creds.c, over cache/origin/
 * (json.h, crypto.h, url.h) and cache/base/.
 */
#ifndef TILEFS_AWS_SSO_H
#define TILEFS_AWS_SSO_H

#include "cache/origin/providers/aws_creds.h"

#define AWS_SSO_TOKEN_MAX 8192	/* an SSO access token, at most */

/* The settings of an SSO profile, owned by the S3 source. */
struct aws_sso {
	char profile[128];
	char session[128];	/* its sso_session, or "" (a legacy profile) */
	char start_url[512];
	char region[64];	/* sso_region: the portal's */
	char account_id[32];
	char role_name[128];
};

/*
 * The SSO settings of PROFILE (its SECTION in the config file CONFIG)
 * into SSO: 1 when the profile signs in with SSO, 0 when it names none of
 * sso_session, sso_start_url, sso_account_id, sso_role_name; -EINVAL with
 * what is missing or contradicts in ERR.
 */
int aws_sso_from_profile(struct aws_sso *sso, const char *config, const char *profile,
			 const char *section, char *err, size_t err_size);

/* The token cache file of SSO into OUT: $HOME/.aws/sso/cache/HEX.json. */
void aws_sso_cache_file(const struct aws_sso *sso, char *out, size_t size);

/* An aws_fetch_fn: the role's keys for CTX (a struct aws_sso) from the SSO
 * portal, with the token read from the CLI's cache now. The principal:
 * the account and role, as the portal that answered vouches for them. */
int aws_sso_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size);

#endif
