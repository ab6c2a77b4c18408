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
 * Left out: Azure Arc's challenge (a 401 naming a key file to read).
 * IDENTITY_HEADER is a secret: read at each fetch, never kept or logged.
 */
#include "cache/origin/providers/azure_identity.h"
#include "cache/origin/providers/oauth.h"
#include "cache/origin/url.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define STORAGE_RESOURCE "https%%3A%%2F%%2Fstorage.azure.com%%2F"	/* in a format */
#define HEADER_MAX 1024		/* the secret header line */

int azure_identity_init(struct azure_identity *id, char *err, size_t err_size)
{
	const char *endpoint = getenv("IDENTITY_ENDPOINT");
	const char *secret = getenv("IDENTITY_HEADER");
	const char *host = getenv("AZURE_POD_IDENTITY_AUTHORITY_HOST");
	const char *client = getenv("AZURE_CLIENT_ID");
	char *client_enc = NULL;
	size_t n;

	memset(id, 0, sizeof(*id));
	if (client && *client && !(client_enc = url_encode(client, false)))
		return -ENOMEM;
	if (endpoint && *endpoint && secret && *secret) {
		if (strncasecmp(endpoint, "http://", 7) != 0 &&
		    strncasecmp(endpoint, "https://", 8) != 0) {
			snprintf(err, err_size, "IDENTITY_ENDPOINT is not an http(s) URL");
			free(client_enc);
			return -EINVAL;
		}
		n = (size_t)snprintf(id->url, sizeof(id->url),
				     "%s%sapi-version=2019-08-01&resource=" STORAGE_RESOURCE "%s%s",
				     endpoint, strchr(endpoint, '?') ? "&" : "?",
				     client_enc ? "&client_id=" : "", client_enc ? client_enc : "");
		snprintf(id->name, sizeof(id->name), "the managed identity endpoint");
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

int azure_identity_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size)
{
	const struct azure_identity *id = arg;
	char *line = calloc(1, HEADER_MAX);
	struct oauth_body *body = malloc(sizeof(*body));
	const char *headers[] = { "Metadata: true", NULL };
	int err;

	if (!line || !body) {
		err = -ENOMEM;
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
	err = oauth_endpoint_call(id->url, id->name, NULL, headers, body);
	if (err)
		goto out;
	err = oauth_token_from_json(body->text, body->len, time(NULL), out, expires);
	if (err)
		goto out;
	char *shown = url_for_log(id->url);
	snprintf(from, from_size, "%s (%.80s)", id->name, shown ? shown : "");
	free(shown);
out:
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
