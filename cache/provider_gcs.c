/*
 * provider_gcs.c - not written yet: SOURCE is recognised and refused with a
 * clear message.
 */
#include "provider.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool gcs_matches(const char *text)
{
	return strncasecmp(text, "gs://", 5) == 0;
}

static int gcs_open(const char *text, const struct source_options *opts, struct source **out,
		     char *err, size_t err_size)
{
	(void)opts;
	(void)out;
	snprintf(err, err_size, "'%s': this tilefs cannot mount gcs sources yet", text);
	return -EINVAL;
}

const struct provider provider_gcs = {
	.name = "gcs",
	.matches = gcs_matches,
	.open = gcs_open,
};
