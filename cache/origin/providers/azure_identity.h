/*
 * azure_identity.h - bearer tokens for Azure Storage, fetched through
 * oauth.h, from the first of, as the Azure SDKs' default chain:
 *   a service principal's secret (AZURE_TENANT_ID, AZURE_CLIENT_ID,
 *     AZURE_CLIENT_SECRET) and
 *   workload identity (AZURE_FEDERATED_TOKEN_FILE, AZURE_TENANT_ID,
 *     AZURE_CLIENT_ID: the file's token as a client assertion, the file
 *     read again at each renewal), both at Microsoft Entra ID's token
 *     endpoint (AZURE_AUTHORITY_HOST, else login.microsoftonline.com);
 *   a managed identity: the App Service / Container Apps endpoint
 *     (IDENTITY_ENDPOINT with IDENTITY_HEADER), Azure Arc's
 *     (IDENTITY_ENDPOINT with IMDS_ENDPOINT: system-assigned only, its
 *     401 challenge answered from the key file the agent names under
 *     /var/opt/azcmagent/tokens), else the instance metadata
 *     service (IMDS: http://169.254.169.254, or
 *     AZURE_POD_IDENTITY_AUTHORITY_HOST). AZURE_CLIENT_ID, when set,
 *     chooses a user-assigned identity; else the system-assigned one.
 *
 * Layer: the origin's providers (cache/origin/providers/), private to the
 * Azure provider; over oauth.c, cache/origin/ and cache/base/.
 */
#ifndef TILEFS_AZURE_IDENTITY_H
#define TILEFS_AZURE_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* Where a managed identity's tokens come from: fixed when the source
 * opens, read at every renewal. */
struct azure_identity {
	char url[2048];		/* the token request, without a secret */
	char name[64];		/* what messages call the endpoint */
	const char *header_env;	/* the environment variable whose value goes
				   in the secret header, or NULL */
	const char *secret_env;	/* Entra: AZURE_CLIENT_SECRET, or NULL */
	const char *assertion_env; /* Entra: AZURE_FEDERATED_TOKEN_FILE, or NULL */
	bool arc;		/* Azure Arc: answer the endpoint's challenge */
	char form[512];		/* Entra: the form without the secret part */
};

/* Set ID up from the environment (see the head of this file). 0, or
 * -EINVAL with why in ERR (an IDENTITY_ENDPOINT that is not http(s), a
 * user-assigned identity asked of Azure Arc, a URL too long). */
int azure_identity_init(struct azure_identity *id, char *err, size_t err_size);

/* A renewal_fetch_fn: a token of the identity ARG (a struct
 * azure_identity) into OUT (a struct oauth_token). */
int azure_identity_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size);

#endif
