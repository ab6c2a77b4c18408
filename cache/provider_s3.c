/*
 * provider_s3.c - not written yet: SOURCE is recognised and refused with a
 * clear message.
 */
#include "provider.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool s3_matches(const char *text)
{
	return strncasecmp(text, "s3://", 5) == 0;
}

static int s3_open(const char *text, const struct source_options *opts, struct source **out,
		     char *err, size_t err_size)
{
	(void)opts;
	(void)out;
	snprintf(err, err_size, "'%s': this tilefs cannot mount s3 sources yet", text);
	return -EINVAL;
}

const struct provider provider_s3 = {
	.name = "s3",
	.matches = s3_matches,
	.open = s3_open,
};
