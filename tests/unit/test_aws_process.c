/* test_aws_process.c - what of tilefs's environment reaches a
 * credential_process (aws_process.c): everything but the secrets tilefs
 * reads for its other sources. */
#include "cache/origin/providers/aws_process.h"
#include "check.h"

int main(void)
{
	static const char *const kept[] = {
		"PATH=/usr/bin", "HOME=/root", "AWS_PROFILE=p", "AWS_ACCESS_KEY_ID=AKID",
		"AWS_SECRET_ACCESS_KEY=s", "AWS_SESSION_TOKEN=t", "AWS_CONFIG_FILE=/c",
		"TILEFS_TIER_SECRETS=not-the-same-name", "AZURE_CLIENT_ID=id",
		"GS_ACCESS_KEY_ID=GOOG", "TILEFS_TIER_SECRET", NULL
	};
	static const char *const dropped[] = {
		"TILEFS_TIER_SECRET=x", "AZURE_CLIENT_SECRET=x", "AZURE_STORAGE_KEY=x",
		"AZURE_STORAGE_SAS_TOKEN=sv=x", "IDENTITY_HEADER=x",
		"GOOGLE_OAUTH_ACCESS_TOKEN=ya29.x", "GS_SECRET_ACCESS_KEY=x",
		"TILEFS_TIER_SECRET=", NULL
	};

	for (const char *const *e = kept; *e; e++)
		CHECK(aws_process_passes(*e), "passed on: %s", *e);
	for (const char *const *e = dropped; *e; e++)
		CHECK(!aws_process_passes(*e), "kept back: %s", *e);
	return check_done();
}
