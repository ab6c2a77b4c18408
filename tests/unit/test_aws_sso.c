/* test_aws_sso.c - an SSO profile as the AWS CLI writes it (aws_sso.c):
 * the settings of an sso_session and of a legacy profile, the token
 * cache's file name, and the fetches that must fail before any request
 * (no token, an expired one, a portal that is not https). The portal's
 * answers are tests/bats/61-aws-profiles.bats's, against a loopback fake. */
#include "cache/origin/providers/aws_sso.h"
#include "check.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64], config[128];

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* aws_sso_from_profile() of [profile dev] in TEXT; *err its message. */
static int parse(const char *text, struct aws_sso *sso, char *err, size_t err_size)
{
	err[0] = '\0';
	write_file(config, text);
	return aws_sso_from_profile(sso, config, "dev", "profile dev", err, err_size);
}

/* The token cache of SSO holding TEXT. */
static void cache_holds(const struct aws_sso *sso, const char *text)
{
	char path[1100];
	aws_sso_cache_file(sso, path, sizeof(path));
	write_file(path, text);
}

int main(void)
{
	struct aws_sso sso;
	struct aws_keys keys;
	char err[512], path[1100], from[160];

	snprintf(dir, sizeof(dir), "/tmp/test_aws_sso.XXXXXX");
	if (!mkdtemp(dir)) {
		CHECK(false, "a scratch dir");
		return check_done();
	}
	snprintf(config, sizeof(config), "%s/config", dir);
	setenv("HOME", dir, 1);
	/* nothing here may reach a portal: a closed loopback port */
	setenv("AWS_ENDPOINT_URL_SSO", "http://127.0.0.1:1", 1);

	CHECK(parse("[profile dev]\nregion = us-east-1\n", &sso, err, sizeof(err)) == 0,
	      "a profile without sso_* settings is no SSO profile");
	CHECK(parse("[profile dev]\nsso_session = corp\nsso_account_id = 111122223333\n"
		    "sso_role_name = reader\n\n[sso-session corp]\nsso_region = eu-west-1\n"
		    "sso_start_url = https://corp.awsapps.com/start\n", &sso, err,
		    sizeof(err)) == 1 && strcmp(sso.session, "corp") == 0 &&
	      strcmp(sso.region, "eu-west-1") == 0 &&
	      strcmp(sso.start_url, "https://corp.awsapps.com/start") == 0 &&
	      strcmp(sso.account_id, "111122223333") == 0 && strcmp(sso.role_name, "reader") == 0,
	      "an sso_session profile takes the session's start URL and region: %s", err);
	aws_sso_cache_file(&sso, path, sizeof(path));
	CHECK(strstr(path, "/.aws/sso/cache/ee0bfd2552fbd840c02cc48b6e823320543c450f.json") &&
	      strncmp(path, dir, strlen(dir)) == 0,
	      "its token cache is named by the SHA-1 of the session's name: %s", path);

	CHECK(parse("[profile dev]\nsso_start_url = https://legacy.awsapps.com/start\n"
		    "sso_region = us-west-2\nsso_account_id = 1\nsso_role_name = r\n", &sso, err,
		    sizeof(err)) == 1 && !sso.session[0] && strcmp(sso.region, "us-west-2") == 0,
	      "a legacy profile: %s", err);
	aws_sso_cache_file(&sso, path, sizeof(path));
	CHECK(strstr(path, "/79e435d7a515078e81c9dffc35f38d5687ebd3a7.json") != NULL,
	      "a legacy profile's token cache is named by the SHA-1 of the start URL: %s", path);

	CHECK(parse("[profile dev]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\n"
		    "sso_region = us-east-1\n\n[sso-session corp]\nsso_region = eu-west-1\n"
		    "sso_start_url = u\n", &sso, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "sets sso_region, and not to the value of its sso_session 'corp'"),
	      "a profile contradicting its session is refused: %s", err);
	CHECK(parse("[profile dev]\nsso_session = none\nsso_account_id = 1\nsso_role_name = r\n",
		    &sso, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "no [sso-session none] in ~/.aws/config gives its sso_start_url"),
	      "a session that is not there: %s", err);
	CHECK(parse("[profile dev]\nsso_start_url = u\nsso_region = r\nsso_role_name = r\n",
		    &sso, err, sizeof(err)) == -EINVAL && strstr(err, "has no sso_account_id"),
	      "a missing setting is named: %s", err);

	/* the fetches that fail before any request */
	CHECK(parse("[profile dev]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\n"
		    "\n[sso-session corp]\nsso_region = eu-west-1\nsso_start_url = u\n", &sso,
		    err, sizeof(err)) == 1, "the session again");
	snprintf(path, sizeof(path), "%s/.aws", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.aws/sso", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.aws/sso/cache", dir);
	mkdir(path, 0700);
	CHECK(aws_sso_fetch(&sso, &keys, from, sizeof(from)) == -EKEYEXPIRED,
	      "no token cached: -EKEYEXPIRED");
	cache_holds(&sso, "{\"accessToken\": \"t\", \"expiresAt\": \"2020-01-01T00:00:00UTC\"}");
	CHECK(aws_sso_fetch(&sso, &keys, from, sizeof(from)) == -EKEYEXPIRED,
	      "a token that expired (written as older CLIs did, ...UTC): -EKEYEXPIRED");
	cache_holds(&sso, "{\"accessToken\": \"\", \"expiresAt\": \"2999-01-01T00:00:00Z\"}");
	CHECK(aws_sso_fetch(&sso, &keys, from, sizeof(from)) == -EKEYEXPIRED,
	      "an empty token: -EKEYEXPIRED");
	cache_holds(&sso, "not json");
	CHECK(aws_sso_fetch(&sso, &keys, from, sizeof(from)) == -EIO,
	      "a file that is not the CLI's: -EIO");
	cache_holds(&sso, "{\"accessToken\": \"t\", \"expiresAt\": \"2999-01-01T00:00:00Z\"}");
	setenv("AWS_ENDPOINT_URL_SSO", "http://portal.example", 1);
	CHECK(aws_sso_fetch(&sso, &keys, from, sizeof(from)) == -EACCES,
	      "a portal over plain http that is not loopback gets no token");
	unsetenv("AWS_ENDPOINT_URL_SSO");

	CHECK(aws_iso8601("2026-11-25T03:00:00UTC") == aws_iso8601("2026-11-25T03:00:00Z") &&
	      aws_iso8601("2026-11-25T03:00:00Z") != 0, "UTC reads as Z");
	CHECK(aws_iso8601("2026-11-25T03:00:00UTCX") == 0, "nothing after UTC");

	nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
	return check_done();
}
