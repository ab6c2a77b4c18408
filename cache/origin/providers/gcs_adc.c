/*
 * gcs_adc.c - tokens of Application Default Credentials from the metadata
 * server (see gcs_adc.h).
 *
 * As Google documents it: GET http://HOST/computeMetadata/v1/instance/
 * service-accounts/default/token with "Metadata-Flavor: Google"; the
 * answer is JSON {"access_token", "expires_in" (seconds, a number),
 * "token_type": "Bearer"}. The server is plain http on the link-local
 * network of the VM or the pod, as every client library reaches it.
 */
#include "cache/origin/providers/gcs_adc.h"
#include "cache/origin/providers/oauth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gcs_metadata_init(struct gcs_metadata *md, char *err, size_t err_size)
{
	const char *host = getenv("GCE_METADATA_HOST");

	if (!host || !*host)
		host = "metadata.google.internal";
	/* host[:port] only: no scheme, path or anything a URL could hide */
	if (strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") !=
	    strlen(host) || strlen(host) > 255) {
		snprintf(err, err_size, "GCE_METADATA_HOST must be HOST or HOST:PORT");
		return -EINVAL;
	}
	snprintf(md->url, sizeof(md->url),
		 "http://%s/computeMetadata/v1/instance/service-accounts/default/token", host);
	return 0;
}

int gcs_metadata_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size)
{
	const struct gcs_metadata *md = arg;
	static const char *const headers[] = { "Metadata-Flavor: Google", NULL };
	struct oauth_body *body = malloc(sizeof(*body));
	int err;

	if (!body)
		return -ENOMEM;
	err = oauth_endpoint_call(md->url, "the metadata server", NULL, headers, NULL,
				  body);
	if (!err)
		err = oauth_token_from_json(body->text, body->len, time(NULL), out, expires);
	if (!err)
		snprintf(from, from_size, "the metadata server (%.100s)", md->url);
	explicit_bzero(body, sizeof(*body));
	free(body);
	return err;
}
