/*
 * azure_identity.c - tokens of an Azure managed identity (see
 * azure_identity.h).
 *
 * The two forms, as Microsoft documents them:
 *   IMDS: GET $HOST/metadata/identity/oauth2/token?api-version=2018-02-01
 *         &resource=https://storage.azure.com/[&client_id=ID] with
 *         "Metadata: true"; the answer's expires_in and expires_on are
 *         strings of digits.
 *   App Service, Container Apps: GET $IDENTITY_ENDPOINT?api-version=
 *         2019-08-01&resource=...[&client_id=ID] with "X-IDENTITY-HEADER:
 *         $IDENTITY_HEADER"; expires_on in seconds since the epoch.
 *   Azure Arc (IDENTITY_ENDPOINT and IMDS_ENDPOINT set, no
 *         IDENTITY_HEADER): GET $IDENTITY_ENDPOINT?api-version=2019-11-01
 *         &resource=... with "Metadata: true" answers 401 with
 *         "WWW-Authenticate: Basic realm=PATH", PATH a file NAME.key of at
 *         most 4096 bytes right in /var/opt/azcmagent/tokens/ (anything
 *         else is refused, as the Azure SDKs refuse it); the same GET
 *         again with "Authorization: Basic CONTENTS" answers the token.
 *         No user-assigned identity.
 *   Entra ID: POST $AUTHORITY/$TENANT/oauth2/v2.0/token, a form of
 *         client_id, scope=https://storage.azure.com/.default,
 *         grant_type=client_credentials and client_secret, or
 *         client_assertion_type=...jwt-bearer with client_assertion (the
 *         federated token file's contents); expires_in a number. The
 *         authority is https, or http on a loopback address (an emulator).
 * The secret, the header and the assertion are read at each fetch and
 * never kept, logged or put in a URL.
 * IDENTITY_HEADER is a secret: read at each fetch, never kept or logged.
 */
#include "cache/origin/providers/azure_identity.h"
#include "cache/origin/providers/oauth.h"
#include "cache/base/log.h"
#include "cache/origin/url.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define STORAGE_RESOURCE "https%%3A%%2F%%2Fstorage.azure.com%%2F"	/* in a format */
#define ASSERTION_MAX (16 * 1024)	/* a federated token file */
#define FORM_MAX (3 * ASSERTION_MAX + 1024)	/* the form, its secret encoded */
#define ARC_TOKEN_DIR "/var/opt/azcmagent/tokens/"	/* where Arc's key files lie */
#define ARC_KEY_MAX 4096		/* an Arc key file, at most */
#define HEADER_MAX (ARC_KEY_MAX + 64)	/* a secret header line */

/* Microsoft Entra ID's token endpoint for TENANT and CLIENT (both set),
 * with AZURE_CLIENT_SECRET or the federated token file as the secret. */
static int entra_init(struct azure_identity *id, const char *tenant, const char *client,
		      bool workload, char *err, size_t err_size)
{
	const char *authority = getenv("AZURE_AUTHORITY_HOST");
	char *tenant_enc = url_encode(tenant, false), *client_enc = url_encode(client, false);
	int rc = 0;

	if (!tenant_enc || !client_enc) {
		rc = -ENOMEM;
		goto out;
	}
	if (!authority || !*authority)
		authority = "https://login.microsoftonline.com";
	if (!oauth_url_safe(authority)) {
		snprintf(err, err_size, "AZURE_AUTHORITY_HOST must be an https URL (or http to "
			 "a loopback address, for an emulator)");
		rc = -EINVAL;
		goto out;
	}
	size_t alen = strlen(authority);
	while (alen > 0 && authority[alen - 1] == '/')
		alen--;
	if ((size_t)snprintf(id->url, sizeof(id->url), "%.*s/%s/oauth2/v2.0/token", (int)alen,
			     authority, tenant_enc) >= sizeof(id->url) ||
	    (size_t)snprintf(id->form, sizeof(id->form), "client_id=%s&scope=https%%3A%%2F%%2F"
			     "storage.azure.com%%2F.default&grant_type=client_credentials",
			     client_enc) >= sizeof(id->form)) {
		snprintf(err, err_size, "AZURE_AUTHORITY_HOST, AZURE_TENANT_ID or AZURE_CLIENT_ID "
			 "is too long");
		rc = -EINVAL;
		goto out;
	}
	if (workload) {
		id->assertion_env = "AZURE_FEDERATED_TOKEN_FILE";
		snprintf(id->name, sizeof(id->name), "Entra ID (workload identity)");
	} else {
		id->secret_env = "AZURE_CLIENT_SECRET";
		snprintf(id->name, sizeof(id->name), "Entra ID (AZURE_CLIENT_SECRET)");
	}
out:
	free(tenant_enc);
	free(client_enc);
	return rc;
}

/* The secret part of an Entra form, read now: "&client_secret=..." or
 * "&client_assertion_type=...&client_assertion=..." appended to FORM
 * (FORM_MAX bytes, holding id->form). 0, or -EACCES (logged: which
 * variable or file, never its contents). */
static int entra_secret(const struct azure_identity *id, char *form)
{
	char *value = NULL, *enc = NULL;
	const char *name;
	int err = -EACCES;

	if (id->secret_env) {
		name = id->secret_env;
		const char *secret = getenv(name);
		if (secret && *secret)
			value = strdup(secret);
	} else {
		name = getenv(id->assertion_env);
		FILE *f = name && *name ? fopen(name, "re") : NULL;
		if (f) {
			value = calloc(1, ASSERTION_MAX + 1);
			size_t n = value ? fread(value, 1, ASSERTION_MAX + 1, f) : 0;
			fclose(f);
			if (value && n > ASSERTION_MAX)
				value[0] = '\0';	/* over the bound: refused below */
			if (value)
				value[strcspn(value, "\r\n")] = '\0';
		}
	}
	if (!value || !value[0]) {
		log_warn("azure: cannot read %s for an Entra ID token", name ? name : id->assertion_env);
		goto out;
	}
	enc = url_encode(value, false);
	if (!enc ||
	    (size_t)snprintf(form + strlen(form), FORM_MAX - strlen(form), "%s%s",
			     id->secret_env ? "&client_secret=" :
			     "&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3A"
			     "client-assertion-type%3Ajwt-bearer&client_assertion=", enc) >=
		    FORM_MAX - strlen(form))
		goto out;
	err = 0;
out:
	if (value) {
		explicit_bzero(value, strlen(value));
		free(value);
	}
	if (enc) {
		explicit_bzero(enc, strlen(enc));
		free(enc);
	}
	return err;
}

int azure_identity_init(struct azure_identity *id, char *err, size_t err_size)
{
	const char *endpoint = getenv("IDENTITY_ENDPOINT");
	const char *secret = getenv("IDENTITY_HEADER");
	const char *host = getenv("AZURE_POD_IDENTITY_AUTHORITY_HOST");
	const char *client = getenv("AZURE_CLIENT_ID");
	const char *tenant = getenv("AZURE_TENANT_ID");
	const char *client_secret = getenv("AZURE_CLIENT_SECRET");
	const char *token_file = getenv("AZURE_FEDERATED_TOKEN_FILE");
	const char *imds_endpoint = getenv("IMDS_ENDPOINT");
	char *client_enc = NULL;
	size_t n;

	memset(id, 0, sizeof(*id));
	if (tenant && *tenant && client && *client && client_secret && *client_secret)
		return entra_init(id, tenant, client, false, err, err_size);
	if (tenant && *tenant && client && *client && token_file && *token_file)
		return entra_init(id, tenant, client, true, err, err_size);
	bool app_service = endpoint && *endpoint && secret && *secret;
	id->arc = !app_service && endpoint && *endpoint && imds_endpoint && *imds_endpoint;
	if (id->arc && client && *client) {
		snprintf(err, err_size, "Azure Arc's managed identity is system-assigned only: "
			 "unset AZURE_CLIENT_ID");
		return -EINVAL;
	}
	if (client && *client && !(client_enc = url_encode(client, false)))
		return -ENOMEM;
	if (app_service || id->arc) {
		if (strncasecmp(endpoint, "http://", 7) != 0 &&
		    strncasecmp(endpoint, "https://", 8) != 0) {
			snprintf(err, err_size, "IDENTITY_ENDPOINT is not an http(s) URL");
			free(client_enc);
			return -EINVAL;
		}
		n = (size_t)snprintf(id->url, sizeof(id->url),
				     "%s%sapi-version=%s&resource=" STORAGE_RESOURCE "%s%s",
				     endpoint, strchr(endpoint, '?') ? "&" : "?",
				     id->arc ? "2019-11-01" : "2019-08-01",
				     client_enc ? "&client_id=" : "", client_enc ? client_enc : "");
		snprintf(id->name, sizeof(id->name), id->arc ? "Azure Arc's identity endpoint" :
			 "the managed identity endpoint");
		if (app_service)
			id->header_env = "IDENTITY_HEADER";
	} else {
		if (!host || !*host)
			host = "http://169.254.169.254";
		size_t hlen = strlen(host);
		while (hlen > 0 && host[hlen - 1] == '/')
			hlen--;
		n = (size_t)snprintf(id->url, sizeof(id->url),
				     "%.*s/metadata/identity/oauth2/token?api-version=2018-02-01"
				     "&resource=" STORAGE_RESOURCE "%s%s", (int)hlen, host,
				     client_enc ? "&client_id=" : "", client_enc ? client_enc : "");
		snprintf(id->name, sizeof(id->name), "the instance metadata service");
	}
	free(client_enc);
	if (n >= sizeof(id->url)) {
		snprintf(err, err_size, "the managed identity's token URL is over %zu bytes",
			 sizeof(id->url));
		return -EINVAL;
	}
	return 0;
}

/* Azure Arc's challenge CHALLENGE answered: "Authorization: Basic KEY"
 * into LINE (HEADER_MAX), KEY read from the file it names, which must be
 * a NAME.key right in ARC_TOKEN_DIR, a regular file of at most
 * ARC_KEY_MAX bytes. 0, or -EACCES (logged, never the key). */
static int arc_answer(const char *challenge, char *line)
{
	static const char realm[] = "Basic realm=";
	const char *path = NULL, *name = NULL;
	char key[ARC_KEY_MAX + 1];
	int fd = -1, err = -EACCES;
	struct stat st;
	ssize_t n = 0;

	/* the realm, then the directory: each matched before what follows it
	   is looked at */
	if (strncasecmp(challenge, realm, sizeof(realm) - 1) == 0)
		path = challenge + sizeof(realm) - 1;
	if (path && strncmp(path, ARC_TOKEN_DIR, sizeof(ARC_TOKEN_DIR) - 1) == 0)
		name = path + sizeof(ARC_TOKEN_DIR) - 1;
	size_t name_len = name ? strlen(name) : 0;
	if (name_len <= 4 || strchr(name, '/') || strcmp(name + name_len - 4, ".key") != 0 ||
	    name[0] == '.') {
		log_warn("azure: Azure Arc's challenge names no key file in " ARC_TOKEN_DIR
			 ": refused");
		return -EACCES;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > ARC_KEY_MAX ||
	    (n = read(fd, key, sizeof(key))) <= 0 || n > ARC_KEY_MAX) {
		log_warn("azure: cannot read Azure Arc's key file %s (regular, at most %d bytes)",
			 path, ARC_KEY_MAX);
		goto out;
	}
	while (n > 0 && (key[n - 1] == '\n' || key[n - 1] == '\r'))
		n--;
	key[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f)
			n = 0;
	if (n > 0 && (size_t)snprintf(line, HEADER_MAX, "Authorization: Basic %s", key) < HEADER_MAX)
		err = 0;
	else
		log_warn("azure: Azure Arc's key file %s holds no usable key", path);
out:
	explicit_bzero(key, sizeof(key));
	if (fd >= 0)
		close(fd);
	return err;
}

int azure_identity_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size)
{
	const struct azure_identity *id = arg;
	char *line = calloc(1, HEADER_MAX), *form = NULL;
	struct oauth_body *body = malloc(sizeof(*body));
	const char *headers[] = { "Metadata: true", NULL, NULL };
	int err;

	if (!line || !body) {
		err = -ENOMEM;
		goto out;
	}
	if (id->secret_env || id->assertion_env) {
		headers[0] = NULL;
		form = calloc(1, FORM_MAX);
		if (!form) {
			err = -ENOMEM;
			goto out;
		}
		memcpy(form, id->form, strlen(id->form) + 1);
		err = entra_secret(id, form);
		if (err)
			goto out;
	}
	if (id->header_env) {
		const char *secret = getenv(id->header_env);
		if (!secret || !*secret || strpbrk(secret, "\r\n") ||
		    (size_t)snprintf(line, HEADER_MAX, "X-IDENTITY-HEADER: %s", secret) >= HEADER_MAX) {
			err = -EACCES;
			goto out;
		}
		headers[0] = line;
	}
	body->answers_challenge = id->arc;
	err = oauth_endpoint_call(id->url, id->name, NULL, headers, form, body);
	if (err == -EACCES && id->arc && body->challenge[0]) {
		err = arc_answer(body->challenge, line);
		if (err)
			goto out;
		headers[1] = line;
		body->answers_challenge = false;
		err = oauth_endpoint_call(id->url, id->name, NULL, headers, NULL, body);
	}
	if (err)
		goto out;
	err = oauth_token_from_json(body->text, body->len, time(NULL), out, expires);
	if (err)
		goto out;
	/* whom the token speaks for: its claims, else what chose the identity
	   (the endpoint and its client_id, the tenant and client of a form) */
	if (oauth_jwt_principal(out) != 0)
		err = oauth_principal_set(out, "azure selector",
					  (const char *const[]){ id->url, id->form }, 2);
	if (err)
		goto out;
	char *shown = url_for_log(id->url);
	snprintf(from, from_size, "%s (%.80s)", id->name, shown ? shown : "");
	free(shown);
out:
	if (form) {
		explicit_bzero(form, FORM_MAX);
		free(form);
	}
	if (line) {
		explicit_bzero(line, HEADER_MAX);
		free(line);
	}
	if (body) {
		explicit_bzero(body, sizeof(*body));
		free(body);
	}
	return err;
}
