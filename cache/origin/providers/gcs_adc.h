/*
 * gcs_adc.h - bearer tokens for Google Cloud Storage from Application
 * Default Credentials, fetched through oauth.h, in ADC's order: the file
 * GOOGLE_APPLICATION_CREDENTIALS names, else gcloud's well-known file
 * ($CLOUDSDK_CONFIG, else ~/.config/gcloud:
 * application_default_credentials.json), of type service_account (a JWT
 * signed RS256, exchanged at the file's token_uri) or authorized_user (a
 * refresh-token grant); else the metadata server (Compute Engine, and GKE
 * workload identity, which answers a pod at the same address):
 * GCE_METADATA_HOST, else metadata.google.internal. A credential file is
 * read again at each renewal; its secrets are not kept between renewals.
 *
 * Layer: the origin's providers (cache/origin/providers/), private to the
 * GCS provider; over oauth.c, cache/origin/ and cache/base/.
 */
#ifndef TILEFS_GCS_ADC_H
#define TILEFS_GCS_ADC_H

#include <stddef.h>
#include <time.h>

/* The metadata server's URLs, fixed when the source opens: the default
 * service account's token, and its email (whom the token speaks for). */
struct gcs_metadata {
	char url[512];
	char email_url[512];
};

/* Set MD up from GCE_METADATA_HOST (host[:port]), else
 * metadata.google.internal. 0, or -EINVAL with why in ERR. */
int gcs_metadata_init(struct gcs_metadata *md, char *err, size_t err_size);

/* A renewal_fetch_fn: the default service account's token from the
 * metadata server ARG (a struct gcs_metadata) into OUT (a struct
 * oauth_token), its principal the account's email. */
int gcs_metadata_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size);

/* A credential file, found when the source opens. */
struct gcs_adc_file {
	char path[4096];
};

/*
 * Find ADC's credential file: GOOGLE_APPLICATION_CREDENTIALS (which must
 * be readable), else gcloud's well-known file when it exists. 1 found, 0
 * none, -EACCES with why in ERR.
 */
int gcs_adc_file_find(struct gcs_adc_file *f, char *err, size_t err_size);

/* A renewal_fetch_fn: a token for the credential file ARG (a struct
 * gcs_adc_file) into OUT (a struct oauth_token), its principal the
 * service account's client_email, or an authorized user's client_id with
 * its account (its refresh token when the file names no account). */
int gcs_adc_file_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size);

#endif
