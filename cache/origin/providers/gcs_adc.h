/*
 * gcs_adc.h - bearer tokens for Google Cloud Storage from Application
 * Default Credentials, fetched through oauth.h. Of ADC's sources this
 * reads the metadata server (Compute Engine, and GKE workload identity,
 * which answers a pod at the same address): GCE_METADATA_HOST, else
 * metadata.google.internal. Credential files (GOOGLE_APPLICATION_CREDENTIALS,
 * gcloud's application_default_credentials.json) are not read yet.
 *
 * Layer: the origin's providers (cache/origin/providers/), private to the
 * GCS provider; over oauth.c, cache/origin/ and cache/base/.
 */
#ifndef TILEFS_GCS_ADC_H
#define TILEFS_GCS_ADC_H

#include <stddef.h>
#include <time.h>

/* The metadata server's token URL, fixed when the source opens. */
struct gcs_metadata {
	char url[512];
};

/* Set MD up from GCE_METADATA_HOST (host[:port]), else
 * metadata.google.internal. 0, or -EINVAL with why in ERR. */
int gcs_metadata_init(struct gcs_metadata *md, char *err, size_t err_size);

/* An oauth_fetch_fn: the default service account's token from the
 * metadata server ARG (a struct gcs_metadata) into OUT (a struct
 * oauth_token). */
int gcs_metadata_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size);

#endif
