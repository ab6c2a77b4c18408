/*
 * provider_azure.c - Azure Blob Storage. SOURCE is az://ACCOUNT/CONTAINER/PREFIX
 * or https://ACCOUNT.blob.core.windows.net/CONTAINER/PREFIX (a SAS may follow
 * as the query); objects are the blobs under PREFIX, directories come from
 * List Blobs with delimiter '/', or without one for every blob below a
 * directory (its pages parsed by azure_listing.c). --endpoint (Azurite, say) replaces
 * https://ACCOUNT.blob.core.windows.net and is path-style: ENDPOINT/CONTAINER/BLOB.
 *
 * Credentials, first found wins: a SAS in SOURCE; --no-sign-request
 * (anonymous, a public container); AZURE_STORAGE_SAS_TOKEN; AZURE_STORAGE_KEY
 * (Shared Key; AZURE_STORAGE_ACCOUNT, if set, must name the same account);
 * a token from Entra ID (a service principal's secret, workload identity)
 * or a managed identity (azure_identity.h gives the order), whose bearer
 * tokens renewal.h renews before they expire, and once more when the
 * service refuses one (azure_rejected()).
 * A SAS rides in every URL; Shared Key signs every attempt (sign() runs on
 * a fetch thread and only reads the source, which is immutable once open
 * but for the token renewal, under its own lock). Neither the key, a
 * signature, a token nor a SAS is ever logged: URLs go to the log through
 * url_for_log() only, and error messages use src->display.
 */
#include "cache/origin/providers/provider_int.h"
#include "cache/origin/providers/azure_identity.h"
#include "cache/origin/providers/azure_listing.h"
#include "cache/origin/providers/oauth.h"
#include "cache/origin/providers/renewal.h"
#include "cache/origin/crypto.h"
#include "cache/base/log.h"
#include "cache/origin/xml.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define AZURE_HOST_SUFFIX ".blob.core.windows.net"
#define AZURE_VERSION "2021-08-06"	/* x-ms-version of every request */
#define AZURE_KEY_MAX 128		/* decoded key bytes (Azure's are 64) */
#define AZURE_QUERY_PARAMS_MAX 64	/* query parameters in a signed URL */
#define AZURE_PATH_MAX 16384		/* path of a signed URL */

struct azure_source {
	struct source base;
	char *account;
	char *container_url;	/* https://ACCOUNT.blob.core.windows.net/CONTAINER or
				   ENDPOINT/CONTAINER (no trailing '/') */
	char *prefix;		/* "" or "a/b/": what every blob name starts with */
	char *sas;		/* SAS token without '?' (appended to every URL), or NULL */
	long page_size;		/* maxresults of a listing page, 0: the server's */
	bool shared_key;	/* sign with key[] */
	uint8_t key[AZURE_KEY_MAX];
	size_t key_len;
	bool bearer;		/* sign with the managed identity's tokens */
	struct azure_identity identity;
	struct renewal renewal;	/* its tokens (when bearer) */
	char credentials_from[200];	/* base.credentials, when bearer */
};

static bool azure_matches(const char *text)
{
	return strncasecmp(text, "az://", 5) == 0 ||
	       (strncasecmp(text, "https://", 8) == 0 && strstr(text, ".blob.core.windows.net"));
}

/* printf into a new string; caller frees. NULL on allocation failure. */
static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
	va_list ap;
	char *out;

	va_start(ap, fmt);
	int n = vasprintf(&out, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : out;
}

static void azure_free(struct source *src)
{
	struct azure_source *az = (struct azure_source *)src;
	if (!az)
		return;
	explicit_bzero(az->key, sizeof(az->key));
	if (az->bearer)
		renewal_release(&az->renewal);
	if (az->sas)
		explicit_bzero(az->sas, strlen(az->sas));
	free(az->sas);
	free(az->account);
	free(az->container_url);
	free(az->prefix);
	free(az->base.display);
	free(az);
}

/* Storage account names: 3 to 24 lowercase letters and digits. */
static bool account_valid(const char *name)
{
	size_t n = strlen(name);
	if (n < 3 || n > 24)
		return false;
	for (const char *p = name; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p))
			return false;
	return true;
}

/* Container names: lowercase letters, digits and '-' ($root, $web: '$' first). */
static bool container_valid(const char *name)
{
	size_t n = strlen(name);
	if (n < 3 || n > 63)
		return false;
	for (const char *p = name; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-' &&
		    !(*p == '$' && p == name))
			return false;
	return true;
}

/*
 * Split SOURCE into az->account, the container (*container, caller frees),
 * az->prefix and the query (*query, caller frees; NULL if none).
 * -EINVAL with a message in err when SOURCE is not one of the two forms.
 */
static int parse_source(const char *text, struct azure_source *az, char **container,
			char **query, char *err, size_t err_size)
{
	char *copy = strdup(text), *host, *path;
	const char *account;
	bool https = strncasecmp(text, "https://", 8) == 0;
	int rc = -EINVAL;

	*container = *query = NULL;
	if (!copy)
		return -ENOMEM;
	copy[strcspn(copy, "#")] = '\0';
	char *q = strchr(copy, '?');
	if (q) {
		*q++ = '\0';
		if (*q && !(*query = strdup(q))) {
			rc = -ENOMEM;
			goto out;
		}
	}
	host = copy + (https ? 8 : 5);	/* az://: the account */
	path = strchr(host, '/');
	if (path)
		*path++ = '\0';
	else
		path = host + strlen(host);
	if (https) {
		size_t n = strlen(host), sn = strlen(AZURE_HOST_SUFFIX);
		char *dot = strchr(host, '.');
		if (n <= sn || strcasecmp(host + n - sn, AZURE_HOST_SUFFIX) != 0 ||
		    dot != host + n - sn) {
			snprintf(err, err_size, "'%s' is not an Azure Blob URL: expected "
				 "https://ACCOUNT" AZURE_HOST_SUFFIX "/CONTAINER[/PREFIX]", az->base.display);
			goto out;
		}
		*dot = '\0';
		for (char *p = host; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		if (url_decode(path) != 0) {
			snprintf(err, err_size, "'%s': bad %%-escape in the path", az->base.display);
			goto out;
		}
	}
	account = host;
	if (!account[0]) {
		const char *env = getenv("AZURE_STORAGE_ACCOUNT");
		if (!env || !env[0]) {
			snprintf(err, err_size, "'%s' names no storage account: write az://ACCOUNT/CONTAINER "
				 "or set AZURE_STORAGE_ACCOUNT", az->base.display);
			goto out;
		}
		account = env;
	}
	if (!account_valid(account)) {
		snprintf(err, err_size, "'%s': '%s' is not a storage account name (3 to 24 lowercase "
			 "letters and digits)", az->base.display, account);
		goto out;
	}
	char *slash = strchr(path, '/');
	if (slash)
		*slash++ = '\0';
	if (!path[0]) {
		snprintf(err, err_size, "'%s' names no container: expected az://ACCOUNT/CONTAINER[/PREFIX]",
			 az->base.display);
		goto out;
	}
	if (!container_valid(path)) {
		snprintf(err, err_size, "'%s': '%s' is not a container name (3 to 63 lowercase "
			 "letters, digits and '-')", az->base.display, path);
		goto out;
	}
	char *prefix = slash ? slash : path + strlen(path);
	while (*prefix == '/')
		prefix++;
	size_t plen = strlen(prefix);
	while (plen > 0 && prefix[plen - 1] == '/')
		plen--;
	az->account = strdup(account);
	*container = strdup(path);
	az->prefix = format("%.*s%s", (int)plen, prefix, plen ? "/" : "");
	rc = az->account && *container && az->prefix ? 0 : -ENOMEM;
out:
	if (rc) {
		free(*container);
		if (*query)
			explicit_bzero(*query, strlen(*query));
		free(*query);
		*container = *query = NULL;
	}
	free(copy);
	return rc;
}

/* ENDPOINT (no trailing '/') or https://ACCOUNT.blob.core.windows.net, then
 * /CONTAINER, into az->container_url. */
static int set_container_url(struct azure_source *az, const char *endpoint, const char *container,
			     char *err, size_t err_size)
{
	if (!endpoint) {
		az->container_url = format("https://%s" AZURE_HOST_SUFFIX "/%s", az->account, container);
		return az->container_url ? 0 : -ENOMEM;
	}
	size_t n = strlen(endpoint);
	while (n > 0 && endpoint[n - 1] == '/')
		n--;
	if ((strncasecmp(endpoint, "http://", 7) != 0 && strncasecmp(endpoint, "https://", 8) != 0) ||
	    strpbrk(endpoint, "?#")) {
		snprintf(err, err_size, "--endpoint '%s': expected http(s)://HOST[:PORT][/PATH], e.g. "
			 "http://127.0.0.1:10000/devstoreaccount1 for Azurite", endpoint);
		return -EINVAL;
	}
	az->container_url = format("%.*s/%s", (int)n, endpoint, container);
	return az->container_url ? 0 : -ENOMEM;
}

/* Decode AZURE_STORAGE_KEY into az->key; -EACCES with a message if unusable. */
static int set_shared_key(struct azure_source *az, const char *key, char *err, size_t err_size)
{
	const char *env_account = getenv("AZURE_STORAGE_ACCOUNT");
	if (env_account && env_account[0] && strcmp(env_account, az->account) != 0) {
		snprintf(err, err_size, "AZURE_STORAGE_KEY is for account '%s' (AZURE_STORAGE_ACCOUNT) "
			 "but %s is in account '%s'", env_account, az->base.display, az->account);
		return -EACCES;
	}
	int rc = base64_decode(key, az->key, sizeof(az->key), &az->key_len);
	if (rc == -ENOMEM)
		return rc;
	if (rc || az->key_len == 0) {
		explicit_bzero(az->key, sizeof(az->key));
		snprintf(err, err_size, "AZURE_STORAGE_KEY is not a storage account key (base64, as "
			 "shown under Access keys in the portal)");
		return -EACCES;
	}
	az->shared_key = true;
	az->base.credentials = "AZURE_STORAGE_KEY";
	return 0;
}

/* The last source of credentials: Entra ID or a managed identity
 * (azure_identity.h), whose first token is fetched now. -EACCES with what was tried when there is none. */
static int use_managed_identity(struct azure_source *az, char *err, size_t err_size)
{
	char why[160];
	int rc = azure_identity_init(&az->identity, err, err_size);

	if (rc)
		return rc == -ENOMEM ? rc : -EACCES;
	rc = oauth_bearer_start(&az->renewal, "azure", azure_identity_fetch, &az->identity,
				az->container_url, why, sizeof(why));
	if (rc == -ENOMEM)
		return rc;
	if (rc == 0) {
		az->bearer = true;
		snprintf(az->credentials_from, sizeof(az->credentials_from), "%s",
			 az->renewal.from);
		az->base.credentials = az->credentials_from;
		az->base.reusable = "the bearer token of Entra ID or the managed identity";
		return 0;
	}
	snprintf(err, err_size, "no Azure credentials for %s: tried, in order, a SAS in SOURCE, "
		 "AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_KEY, and a token from %s (%s). "
		 "Set AZURE_STORAGE_KEY (Shared Key, with AZURE_STORAGE_ACCOUNT) or "
		 "AZURE_STORAGE_SAS_TOKEN, put a SAS in SOURCE, set AZURE_TENANT_ID and "
		 "AZURE_CLIENT_ID with AZURE_CLIENT_SECRET or AZURE_FEDERATED_TOKEN_FILE, run "
		 "where a managed identity is assigned, or use --no-sign-request for a public "
		 "container", az->base.display,
		 az->identity.name, why);
	return -EACCES;
}

/* Take the first usable credentials (see the head of this file). QUERY is
 * the SOURCE's query: taken over. */
static int find_credentials(struct azure_source *az, char *query, const struct source_options *opts,
			    char *err, size_t err_size)
{
	const char *env_sas = getenv("AZURE_STORAGE_SAS_TOKEN");
	const char *env_key = getenv("AZURE_STORAGE_KEY");

	if (query) {
		az->sas = query;
		az->base.credentials = "the SAS in SOURCE";
		az->base.reusable = "the SAS in SOURCE";
		return 0;
	}
	if (opts->no_sign_request) {
		az->base.credentials = "";
		return 0;
	}
	if (env_sas && env_sas[strspn(env_sas, "?")]) {
		az->sas = strdup(env_sas + strspn(env_sas, "?"));
		az->base.credentials = "AZURE_STORAGE_SAS_TOKEN";
		az->base.reusable = "the SAS of AZURE_STORAGE_SAS_TOKEN";
		return az->sas ? 0 : -ENOMEM;
	}
	if (env_key && env_key[0])
		return set_shared_key(az, env_key, err, err_size);
	return use_managed_identity(az, err, err_size);
}

static int azure_open(const char *text, const struct source_options *opts, struct source **out,
		      char *err, size_t err_size)
{
	struct azure_source *az = calloc(1, sizeof(*az));
	char *container = NULL, *query = NULL;
	int rc = -ENOMEM;

	if (!az)
		return -ENOMEM;
	az->base.provider = &provider_azure;
	az->base.credentials = "";
	az->page_size = opts->page_size;
	az->base.display = url_for_log(text);
	if (!az->base.display)
		goto fail;
	rc = parse_source(text, az, &container, &query, err, err_size);
	if (rc)
		goto fail;
	rc = set_container_url(az, opts->endpoint, container, err, err_size);
	if (rc)
		goto fail;
	rc = find_credentials(az, query, opts, err, err_size);
	query = NULL;	/* taken over, or freed with az */
	if (rc)
		goto fail;
	free(container);
	*out = &az->base;
	return 0;
fail:
	if (rc == -ENOMEM)
		snprintf(err, err_size, "out of memory");
	if (query)
		explicit_bzero(query, strlen(query));
	free(query);
	free(container);
	azure_free(&az->base);
	return rc;
}

/* ---- URLs ---- */

static char *azure_object_url(struct source *src, const char *path)
{
	struct azure_source *az = (struct azure_source *)src;
	char *name = format("%s%s", az->prefix, path);
	char *enc = name ? url_encode(name, true) : NULL;
	char *url = enc ? format("%s/%s%s%s", az->container_url, enc, az->sas ? "?" : "",
				 az->sas ? az->sas : "") : NULL;
	free(enc);
	free(name);
	return url;
}

/* Blob names in the listing of DIR start with this; caller frees. */
static char *listing_prefix(struct azure_source *az, const char *dir, const char *names)
{
	return format("%s%s%s%s", az->prefix, dir, dir[0] ? "/" : "", names);
}

/* List Blobs of DIR: with DEEP, every blob below it whose path starts
 * with NAMES, else one level. */
static char *listing_url(struct source *src, const char *dir, const char *names,
			 const char *cursor, bool deep)
{
	struct azure_source *az = (struct azure_source *)src;
	char *prefix = listing_prefix(az, dir, names);
	char *enc_prefix = prefix ? url_encode(prefix, true) : NULL;
	char *enc_cursor = cursor ? url_encode(cursor, true) : NULL;
	char *url = NULL;
	char page[40] = "";

	if (!enc_prefix || (cursor && !enc_cursor))
		goto out;
	if (az->page_size > 0)
		snprintf(page, sizeof(page), "&maxresults=%ld", az->page_size);
	url = format("%s?restype=container&comp=list%s%s%s%s%s%s%s%s",
		     az->container_url, enc_prefix[0] ? "&prefix=" : "", enc_prefix,
		     deep ? "" : "&delimiter=%2F",
		     cursor ? "&marker=" : "", cursor ? enc_cursor : "", page,
		     az->sas ? "&" : "", az->sas ? az->sas : "");
out:
	free(enc_cursor);
	free(enc_prefix);
	free(prefix);
	return url;
}

static char *azure_listing_url(struct source *src, const char *dir, const char *cursor)
{
	return listing_url(src, dir, "", cursor, false);
}

static char *azure_deep_listing_url(struct source *src, const char *dir, const char *names,
				    const char *cursor)
{
	return listing_url(src, dir, names, cursor, true);
}

/* A List Blobs page of DIR; DEEP: listed without delimiter. */
static int parse_listing(struct source *src, const char *dir, bool deep, const char *body,
			 size_t len, listing_entry_fn add, void *arg, char **next_cursor)
{
	char *prefix = listing_prefix((struct azure_source *)src, dir, "");
	int err = prefix ? azure_listing_parse(prefix, dir, deep, body, len, add, arg, next_cursor)
			 : -ENOMEM;
	free(prefix);
	return err;
}

static int azure_parse_listing(struct source *src, const char *dir, const char *body, size_t len,
			       listing_entry_fn add, void *arg, char **next_cursor)
{
	return parse_listing(src, dir, false, body, len, add, arg, next_cursor);
}

static int azure_parse_deep_listing(struct source *src, const char *dir, const char *body,
				    size_t len, listing_entry_fn add, void *arg, char **next_cursor)
{
	return parse_listing(src, dir, true, body, len, add, arg, next_cursor);
}

/* ---- Shared Key signing ---- */

/* RFC 1123 date in GMT, independent of the locale: "Sun, 06 Nov 1994 08:49:37 GMT". */
static void http_date(time_t t, char *out, size_t size)
{
	static const char days[][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char months[][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	struct tm tm;
	gmtime_r(&t, &tm);
	snprintf(out, size, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
		 months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

struct query_param {
	char *name, *value;
};

static int by_name_then_value(const void *a, const void *b)
{
	const struct query_param *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->value, y->value);
}

/*
 * The canonicalized resource of URL: "/ACCOUNT" + the URL's path as sent,
 * then one "\nname:value" line per query parameter (names lowercased and
 * sorted, values decoded, a repeated name's values joined with ','). With a
 * path-style endpoint (Azurite) the path starts with the account again, and
 * that is what the server checks. Caller frees; NULL with *err set.
 */
static char *canonicalized_resource(const struct azure_source *az, const char *url, int *err)
{
	struct query_param params[AZURE_QUERY_PARAMS_MAX];
	size_t nparams = 0, size;
	char *path = malloc(AZURE_PATH_MAX), *query = NULL, *out = NULL;
	const char *q;
	FILE *f = NULL;

	*err = -ENOMEM;
	if (!path)
		return NULL;
	url_split(url, path, AZURE_PATH_MAX, &q);
	if (strlen(path) + 1 >= AZURE_PATH_MAX) {
		*err = -ENAMETOOLONG;
		goto out;
	}
	if (q && !(query = strndup(q, strcspn(q, "#"))))
		goto out;
	for (char *save = NULL, *p = query ? strtok_r(query, "&", &save) : NULL; p;
	     p = strtok_r(NULL, "&", &save)) {
		if (nparams == AZURE_QUERY_PARAMS_MAX) {
			*err = -EINVAL;
			goto out;
		}
		char *eq = strchr(p, '=');
		if (eq)
			*eq++ = '\0';
		for (char *c = p; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		if (url_decode(p) != 0 || (eq && url_decode(eq) != 0)) {
			*err = -EINVAL;
			goto out;
		}
		params[nparams].name = p;
		params[nparams].value = eq ? eq : "";
		nparams++;
	}
	qsort(params, nparams, sizeof(params[0]), by_name_then_value);

	f = open_memstream(&out, &size);
	if (!f)
		goto out;
	fprintf(f, "/%s%s", az->account, path);
	for (size_t i = 0; i < nparams; i++) {
		if (i > 0 && strcmp(params[i].name, params[i - 1].name) == 0)
			fprintf(f, ",%s", params[i].value);
		else
			fprintf(f, "\n%s:%s", params[i].name, params[i].value);
	}
	if (fclose(f) != 0 || !out) {
		free(out);
		out = NULL;
		goto out;
	}
	*err = 0;
out:
	free(query);
	free(path);
	return out;
}

/*
 * The Shared Key string to sign for attempt A sent at DATE (the x-ms-date
 * value): the verb, eleven standard headers (only If-Match and Range are
 * ever sent; Content-Length is empty for a GET), the x-ms- headers sorted,
 * then the canonicalized resource. Caller frees; NULL with *err set.
 */
static char *string_to_sign(const struct azure_source *az, const struct http_attempt *a,
			    const char *date, int *err)
{
	char range[64] = "";
	char *resource = canonicalized_resource(az, a->url, err);

	if (!resource)
		return NULL;
	if (a->ranged)
		snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)a->first,
			 (unsigned long long)a->last);
	char *out = format("%s\n\n\n\n\n\n\n\n%s\n\n%s\n%s\nx-ms-date:%s\nx-ms-version:%s\n%s",
			   a->method, a->if_match ? a->if_match : "",
			   a->if_unmodified_since ? a->if_unmodified_since : "", range, date,
			   AZURE_VERSION, resource);
	free(resource);
	if (!out)
		*err = -ENOMEM;
	return out;
}

static int append_header(struct curl_slist **headers, const char *line)
{
	struct curl_slist *grown = curl_slist_append(*headers, line);
	if (!grown)
		return -ENOMEM;
	*headers = grown;
	return 0;
}

/* "Authorization: Bearer" with the managed identity's current token (one
 * due is renewed in the background); which token signed goes to
 * *CREDENTIAL (http_attempt.credential). */
static int sign_bearer(const struct azure_source *az, time_t now, struct curl_slist **headers,
		       uint64_t *credential)
{
	struct oauth_token *token = malloc(sizeof(*token));
	char *line = malloc(OAUTH_TOKEN_MAX + 32);
	int err = -ENOMEM;

	if (!token || !line)
		goto out;
	/* the renewal has its own lock: the source is otherwise read-only */
	err = renewal_get_serial((struct renewal *)&az->renewal, now, token, credential);
	if (err)
		goto out;
	snprintf(line, OAUTH_TOKEN_MAX + 32, "Authorization: Bearer %s", token->access_token);
	err = append_header(headers, line);
out:
	if (token) {
		explicit_bzero(token, sizeof(*token));
		free(token);
	}
	if (line) {
		explicit_bzero(line, OAUTH_TOKEN_MAX + 32);
		free(line);
	}
	return err;
}

/* The headers of attempt A sent at time NOW (see azure_sign). */
static int sign_at(const struct azure_source *az, const struct http_attempt *a, time_t now,
		   struct curl_slist **headers)
{
	char date[40], line[192];
	int err;

	http_date(now, date, sizeof(date));
	snprintf(line, sizeof(line), "x-ms-date: %s", date);
	err = append_header(headers, line);
	if (!err)
		err = append_header(headers, "x-ms-version: " AZURE_VERSION);
	if (!err && az->bearer)
		return sign_bearer(az, now, headers, a->credential);
	if (err || !az->shared_key)
		return err;

	char *text = string_to_sign(az, a, date, &err);
	if (!text)
		return err;
	uint8_t mac[SHA256_LEN];
	hmac_sha256(az->key, az->key_len, text, strlen(text), mac);
	free(text);
	char *signature = base64_encode(mac, sizeof(mac));
	char *auth = signature ? format("Authorization: SharedKey %s:%s", az->account, signature) : NULL;
	err = auth ? append_header(headers, auth) : -ENOMEM;
	if (auth)
		explicit_bzero(auth, strlen(auth));
	free(auth);
	free(signature);
	explicit_bzero(mac, sizeof(mac));
	return err;
}

/* x-ms-date and x-ms-version on every request; with Shared Key, also the
 * Authorization header for exactly what this attempt sends. */
static int azure_sign(void *signer, const struct http_attempt *a, struct curl_slist **headers)
{
	return sign_at(signer, a, time(NULL), headers);
}

/* See source_identity_hash(): the account's key, whom a bearer token
 * speaks for (oauth.h), or a SAS's signature (its sig= value: the SAS
 * whole when it has none). */
static int azure_identity(struct source *src, char *out, size_t size)
{
	struct azure_source *az = (struct azure_source *)src;
	if (az->shared_key) {
		snprintf(out, size, "azure %s key", az->account);
	} else if (az->bearer) {
		return oauth_renewal_principal(&az->renewal, "azure", out, size);
	} else if (az->sas) {
		const char *sig = az->sas;
		for (const char *p = az->sas; p; p = strchr(p, '&'), p = p ? p + 1 : NULL)
			if (strncmp(p, "sig=", 4) == 0)
				sig = p + 4;
		snprintf(out, size, "azure sas %.*s", (int)strcspn(sig, "&"), sig);
	} else {
		snprintf(out, size, "anonymous");
	}
	return 0;
}

/* The service refused a signed request (an expired or revoked token:
 * 401 InvalidAuthenticationInfo from Azure, 403 AuthenticationFailed from
 * Azurite): with a managed identity, renew its token once and say to
 * send the request again. */
static int azure_rejected(void *signer, long status, const char *body, size_t len)
{
	struct azure_source *az = signer;
	time_t now = time(NULL);

	(void)body;
	(void)len;
	if (!az->bearer || (status != 401 && status != 403))
		return 0;
	log_warn("azure: %s refused the bearer token (HTTP %ld); renewing it",
		 az->base.display, status);
	/* requests refused in the second a renewal happened share it */
	return renewal_force(&az->renewal, now, now - 1) == 0 ? 1 : -EACCES;
}

static struct renewal *azure_renewal(struct source *src)
{
	struct azure_source *az = (struct azure_source *)src;
	return az->bearer ? &az->renewal : NULL;
}

const struct provider provider_azure = {
	.name = "azure",
	.matches = azure_matches,
	.open = azure_open,
	.free = azure_free,
	.object_url = azure_object_url,
	.listing_url = azure_listing_url,
	.parse_listing = azure_parse_listing,
	.deep_listing_url = azure_deep_listing_url,
	.parse_deep_listing = azure_parse_deep_listing,
	.sign = azure_sign,
	.credentials_rejected = azure_rejected,
	.renewal = azure_renewal,
	.describe_error = provider_xml_error,
	.identity = azure_identity,
};
