/* test_gcs_adc.c - the metadata server's token URL (gcs_metadata_init)
 * and what GCE_METADATA_HOST may hold; nothing here is fetched. */
#include "cache/origin/providers/gcs_adc.h"
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	struct gcs_metadata md;
	char err[256];

	unsetenv("GCE_METADATA_HOST");
	CHECK(gcs_metadata_init(&md, err, sizeof(err)) == 0 &&
	      strcmp(md.url, "http://metadata.google.internal/computeMetadata/v1/instance/"
		     "service-accounts/default/token") == 0, "the default host: %s", md.url);
	setenv("GCE_METADATA_HOST", "127.0.0.1:8080", 1);
	CHECK(gcs_metadata_init(&md, err, sizeof(err)) == 0 &&
	      strncmp(md.url, "http://127.0.0.1:8080/computeMetadata/", 38) == 0,
	      "GCE_METADATA_HOST moves it: %s", md.url);
	static const char *const bad[] = { "http://evil/", "a/b", "host?x", "user@host" };
	for (size_t i = 0; i < 4; i++) {
		setenv("GCE_METADATA_HOST", bad[i], 1);
		CHECK(gcs_metadata_init(&md, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "GCE_METADATA_HOST"), "'%s' refused", bad[i]);
	}
	unsetenv("GCE_METADATA_HOST");
	return check_done();
}
