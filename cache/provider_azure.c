/*
 * provider_azure.c - not written yet: SOURCE is recognised and refused with a
 * clear message.
 */
#include "provider.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool azure_matches(const char *text)
{
	return strncasecmp(text, "az://", 5) == 0 || (strncasecmp(text, "https://", 8) == 0 && strstr(text, ".blob.core.windows.net"));
}

static int azure_open(const char *text, const struct source_options *opts, struct source **out,
		     char *err, size_t err_size)
{
	(void)opts;
	(void)out;
	snprintf(err, err_size, "'%s': this tilefs cannot mount azure sources yet", text);
	return -EINVAL;
}

const struct provider provider_azure = {
	.name = "azure",
	.matches = azure_matches,
	.open = azure_open,
};
