/*
 * credentials_table.c - see credentials_table.h. The table, then its two
 * printers.
 *
 * A row's texts may hold `code` spans: Markdown keeps them, roff prints
 * them in bold. A new source is a row in its store's place in the chain
 * (the steps are numbered as printed); a variable read outside the chain
 * (a region, an endpoint) is a row with step false, printed after them.
 */
#include "tools/credentials_table.h"

#include <stdbool.h>
#include <string.h>

#define MD_WIDTH 76		/* columns of the Markdown part */
#define TEXT_MAX 8192		/* a row as one paragraph, at most */

enum credential_store { STORE_HTTP, STORE_S3, STORE_AZURE, STORE_GCS, STORE_ALL, STORE_COUNT };

/* Each store's heading and what holds for its whole chain. */
static const struct {
	const char *name;
	const char *intro;
} stores[STORE_COUNT] = {
	[STORE_HTTP] = { "HTTP(S) (`http://`, `https://`)",
		"Nothing but SOURCE itself." },
	[STORE_S3] = { "S3 (`s3://`)",
		"In the AWS SDKs' order. STS is asked for the roles of web identity "
		"and of a profile's `role_arn`. A profile named by `--profile` or "
		"`AWS_PROFILE` that holds no credentials fails the mount; with neither, "
		"the profile `default` is passed over when it holds none." },
	[STORE_AZURE] = { "Azure Blob (`az://`, `https://ACCOUNT.blob.core.windows.net/`)",
		"The sources from Entra ID on are those of the Azure SDKs, tried in "
		"their order: the first whose variables are set is the one asked, and "
		"the instance metadata service when none is. Their tokens go over "
		"https only: with an http `--endpoint` none is asked." },
	[STORE_GCS] = { "Google Cloud Storage (`gs://`)",
		"The Application Default Credentials last, as Google's client "
		"libraries find them; their tokens go over https only." },
	[STORE_ALL] = { "Every store",
		"Variables any mount or warm may read, whatever its SOURCE." },
};

struct credential_row {
	enum credential_store store;
	bool step;		/* a source of the store's chain; else a setting */
	const char *source;	/* its name */
	const char *variables;	/* the variables it reads, space-separated; NULL: none */
	const char *what;	/* what it is and how it is used */
};

/* Each store's chain in the order it is tried, then its settings. */
static const struct credential_row rows[] = {
	{ STORE_HTTP, true, "a query string in SOURCE", NULL,
	  "A token of the URL (`https://host/path/?sig=...`), sent with every request "
	  "and never logged." },

	{ STORE_S3, true, "`--no-sign-request`", NULL,
	  "For public buckets: requests go unsigned." },
	{ STORE_S3, true, "static keys", "AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN",
	  "The first two both or neither (one alone fails the mount), with the "
	  "session token when it is set. Passed over with `--profile`, as the AWS CLI "
	  "does." },
	{ STORE_S3, true, "web identity",
	  "AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN AWS_ROLE_SESSION_NAME",
	  "STS `AssumeRoleWithWebIdentity` for the role `AWS_ROLE_ARN` names (the "
	  "token file without it fails the mount), with the token the file holds "
	  "(at most 16 KiB), read again at each renewal as it rotates (EKS IAM roles "
	  "for service accounts). Passed over with `--profile`." },
	{ STORE_S3, true, "profile: `role_arn` with `web_identity_token_file`",
	  "AWS_PROFILE AWS_CONFIG_FILE HOME",
	  "The profile `--profile NAME` names, else `AWS_PROFILE`, else `default`, "
	  "in `AWS_CONFIG_FILE` (default `$HOME/.aws/config`, its section "
	  "`[profile NAME]`, or `[default]`): its `role_arn` with its `web_identity_token_file` (and "
	  "`role_session_name`), asked of STS as web identity is." },
	{ STORE_S3, true, "profile: `role_arn` with `source_profile` or `credential_source`",
	  "AWS_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE HOME",
	  "STS `AssumeRole` for the profile's `role_arn` (with its `role_session_name` "
	  "and `external_id`), signed with Signature V4 by the source's keys: its "
	  "`source_profile`'s SSO sign-in, keys or `credential_process` (a source "
	  "profile that is itself a role is not followed), or its `credential_source`: "
	  "`Environment` (the static keys' variables; reached with `--profile` only), "
	  "`Ec2InstanceMetadata` (the instance's role) or `EcsContainer` (the container "
	  "endpoint). Short-lived source keys are fetched afresh before each "
	  "`AssumeRole`." },
	{ STORE_S3, true, "profile: SSO sign-in (`sso_session`, or a legacy SSO profile)",
	  "AWS_PROFILE AWS_CONFIG_FILE AWS_ENDPOINT_URL_SSO HOME",
	  "The role `sso_role_name` of the account `sso_account_id`, from the SSO "
	  "portal (`GetRoleCredentials`, at `AWS_ENDPOINT_URL_SSO`, else "
	  "`https://portal.sso.REGION.amazonaws.com`), with the access token `aws sso "
	  "login` left in `$HOME/.aws/sso/cache/`, read again at each renewal; an "
	  "expired token fails with the `aws sso login` command to run. tilefs never "
	  "signs in nor refreshes the token." },
	{ STORE_S3, true, "profile: keys",
	  "AWS_PROFILE AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE HOME",
	  "The profile's `aws_access_key_id` and `aws_secret_access_key` (and "
	  "`aws_session_token`), from `[NAME]` in `AWS_SHARED_CREDENTIALS_FILE` "
	  "(default `$HOME/.aws/credentials`), else from its section of "
	  "`AWS_CONFIG_FILE`." },
	{ STORE_S3, true, "profile: `credential_process`",
	  "AWS_PROFILE AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE HOME",
	  "The profile's command, run without a shell (its words split as a POSIX "
	  "shell would), which must print the AWS CLI's Version 1 JSON, at most 64 "
	  "KiB, and exit 0 within 30 s of its start, else it is killed with its "
	  "process group and its answer is void. It gets tilefs's environment less "
	  "the secrets of other sources (`TILEFS_TIER_SECRET`, `AZURE_CLIENT_SECRET`, "
	  "`AZURE_STORAGE_KEY`, `AZURE_STORAGE_SAS_TOKEN`, `IDENTITY_HEADER`, "
	  "`GOOGLE_OAUTH_ACCESS_TOKEN`, `GS_SECRET_ACCESS_KEY`), and is run again "
	  "before its `Expiration` (without one, its keys are kept for the mount's "
	  "life)." },
	{ STORE_S3, true, "container credentials (ECS task roles, EKS Pod Identity)",
	  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI "
	  "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE AWS_CONTAINER_AUTHORIZATION_TOKEN",
	  "The relative URI asked at `http://169.254.170.2`, else the full URI (https, "
	  "or http to a loopback address, `169.254.170.2`, `169.254.170.23` or "
	  "`[fd00:ec2::23]`; "
	  "anything else fails the mount), with an `Authorization` header from the "
	  "token file (at most 4 KiB, read again at each renewal as it rotates), "
	  "else from the token." },
	{ STORE_S3, true, "the instance's role (IMDSv2)",
	  "AWS_EC2_METADATA_DISABLED AWS_EC2_METADATA_SERVICE_ENDPOINT",
	  "The instance metadata service at `http://169.254.169.254` (or at "
	  "`AWS_EC2_METADATA_SERVICE_ENDPOINT`), with a session token; "
	  "`AWS_EC2_METADATA_DISABLED=true` turns it off." },
	{ STORE_S3, false, "region", "AWS_REGION AWS_DEFAULT_REGION",
	  "`--region`, else `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the "
	  "profile's `region`, else `us-east-1`." },
	{ STORE_S3, false, "STS endpoint",
	  "AWS_ENDPOINT_URL_STS AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION",
	  "Where the roles are asked for: `AWS_ENDPOINT_URL_STS`, else "
	  "`AWS_ENDPOINT_URL`, else `https://sts.REGION.amazonaws.com` for "
	  "`AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`." },

	{ STORE_AZURE, true, "a SAS in SOURCE", NULL,
	  "SOURCE's query (`az://ACCOUNT/CONTAINER/PREFIX?sv=...`), sent with every "
	  "request and never logged." },
	{ STORE_AZURE, true, "`--no-sign-request`", NULL,
	  "For public containers: requests go unsigned." },
	{ STORE_AZURE, true, "SAS token", "AZURE_STORAGE_SAS_TOKEN",
	  "A SAS, with or without its leading `?`." },
	{ STORE_AZURE, true, "Shared Key", "AZURE_STORAGE_KEY AZURE_STORAGE_ACCOUNT",
	  "The account's key, base64 as the portal shows it under Access keys; "
	  "`AZURE_STORAGE_ACCOUNT`, if set, must name SOURCE's account." },
	{ STORE_AZURE, true, "Entra ID: service principal",
	  "AZURE_TENANT_ID AZURE_CLIENT_ID AZURE_CLIENT_SECRET AZURE_AUTHORITY_HOST",
	  "A token for the client and its secret from Microsoft Entra ID at "
	  "`AZURE_AUTHORITY_HOST` (default `https://login.microsoftonline.com`; https, "
	  "or http to a loopback host only: the URL is parsed and its host compared, "
	  "so `http://localhost.example` or `http://127.0.0.1@example` is "
	  "refused)." },
	{ STORE_AZURE, true, "Entra ID: workload identity",
	  "AZURE_TENANT_ID AZURE_CLIENT_ID AZURE_FEDERATED_TOKEN_FILE AZURE_AUTHORITY_HOST",
	  "As the service principal, with the token the file holds (at most 16 KiB, "
	  "read again at each renewal as it rotates) sent as a client assertion "
	  "(AKS workload identity)." },
	{ STORE_AZURE, true, "managed identity: App Service, Container Apps",
	  "IDENTITY_ENDPOINT IDENTITY_HEADER AZURE_CLIENT_ID",
	  "The endpoint, with the header's secret; `AZURE_CLIENT_ID` picks a "
	  "user-assigned identity, else the system-assigned one answers." },
	{ STORE_AZURE, true, "managed identity: Azure Arc", "IDENTITY_ENDPOINT IMDS_ENDPOINT",
	  "The endpoint (without `IDENTITY_HEADER`), its challenge answered with the "
	  "key file it names, which must be a `NAME.key` of at most 4 KiB right in "
	  "`/var/opt/azcmagent/tokens/`, as the Azure SDKs require. System-assigned only: `AZURE_CLIENT_ID` "
	  "set fails the mount." },
	{ STORE_AZURE, true, "managed identity: the instance metadata service",
	  "AZURE_POD_IDENTITY_AUTHORITY_HOST AZURE_CLIENT_ID",
	  "`http://169.254.169.254` (or `AZURE_POD_IDENTITY_AUTHORITY_HOST`), on a VM, "
	  "a scale set or an AKS node; `AZURE_CLIENT_ID` picks a user-assigned "
	  "identity, else the system-assigned one answers." },
	{ STORE_AZURE, false, "account", "AZURE_STORAGE_ACCOUNT",
	  "The account of a SOURCE that names none (`az:///CONTAINER/PREFIX`)." },

	{ STORE_GCS, true, "`--no-sign-request`", NULL,
	  "For public buckets: requests go unsigned." },
	{ STORE_GCS, true, "OAuth2 access token", "GOOGLE_OAUTH_ACCESS_TOKEN",
	  "A bearer token, e.g. from `gcloud auth print-access-token`; tilefs does "
	  "not renew it." },
	{ STORE_GCS, true, "HMAC key", "GS_ACCESS_KEY_ID GS_SECRET_ACCESS_KEY",
	  "Both or neither (one alone fails the mount); requests are signed "
	  "`GOOG4-HMAC-SHA256`." },
	{ STORE_GCS, true, "Application Default Credentials: a file",
	  "GOOGLE_APPLICATION_CREDENTIALS CLOUDSDK_CONFIG HOME",
	  "The file `GOOGLE_APPLICATION_CREDENTIALS` names (one that cannot be read "
	  "fails the mount), else gcloud's `application_default_credentials.json` in "
	  "`CLOUDSDK_CONFIG`, else in `$HOME/.config/gcloud`: a `service_account` (a "
	  "JWT signed RS256 with its private key, exchanged at its `token_uri` for a "
	  "token of scope `devstorage.read_only`) or an `authorized_user` (its "
	  "refresh token), read again at each renewal. A `token_uri` must be https, "
	  "or http to a loopback host (compared as for `AZURE_AUTHORITY_HOST`)." },
	{ STORE_GCS, true, "Application Default Credentials: the metadata server",
	  "GCE_METADATA_HOST",
	  "`metadata.google.internal` (or `GCE_METADATA_HOST`, as HOST or HOST:PORT), "
	  "asked with `Metadata-Flavor: Google`: the VM's service account on Compute "
	  "Engine, the pod's on GKE with workload identity (its email, "
	  "`service-accounts/default/email`, names the mount's identity)." },

	{ STORE_ALL, false, "cache tier secret", "TILEFS_TIER_SECRET",
	  "With `--tier` and no `--tier-secret`: the secret sent to the tier in "
	  "`X-Tilefs-Tier-Secret`; `tilefs tier-config` takes it when `--secret` is "
	  "not given." },
	{ STORE_ALL, false, "cache dir", "XDG_CACHE_HOME HOME",
	  "The default `--cache-dir` of a user other than root: "
	  "`$XDG_CACHE_HOME/tilefs`, else `$HOME/.cache/tilefs` (root's is "
	  "`/var/cache/tilefs`)." },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* ---- roff ---- */

/* TEXT for roff: `code` spans in bold, a backslash as "\e", '-' as "\-"
 * (a minus, so names can be searched and copied); a line never starts
 * with '.' or '\''. */
static void man_text(FILE *out, const char *text, bool line_start)
{
	bool code = false;
	for (const char *p = text; *p; p++) {
		if (line_start && (*p == '.' || *p == '\''))
			fputs("\\&", out);
		line_start = false;
		if (*p == '`') {
			fputs(code ? "\\fR" : "\\fB", out);
			code = !code;
		} else if (*p == '\\') {
			fputs("\\e", out);
		} else if (*p == '-') {
			fputs("\\-", out);
		} else {
			fputc(*p, out);
		}
	}
	if (code)
		fputs("\\fR", out);
}

/* VARIABLES (space-separated) as "\fBA\fR, \fBB\fR". */
static void man_variables(FILE *out, const char *variables)
{
	for (const char *p = variables; *p;) {
		size_t len = strcspn(p, " ");
		fprintf(out, "\\fB%.*s\\fR", (int)len, p);	/* names: A-Z, 0-9, _ */
		p += len;
		p += strspn(p, " ");
		if (*p)
			fputs(", ", out);
	}
}

static void man_row(FILE *out, const struct credential_row *r, int step)
{
	fputs(".TP\n", out);
	if (step)
		fprintf(out, "\\fB%d.\\fR ", step);
	man_text(out, r->source, !step);
	if (r->variables) {
		fputs(": ", out);
		man_variables(out, r->variables);
	}
	fputc('\n', out);
	man_text(out, r->what, true);
	fputc('\n', out);
}

void credentials_table_man(FILE *out)
{
	/* long names: neither justified nor hyphenated */
	fputs(".SH ENVIRONMENT\n.ad l\n.nh\n", out);
	man_text(out, "Where each store's credentials come from, in the order they are "
		 "tried: the first source that is set is the one used, and if it fails, "
		 "the mount fails with a message saying what failed; with none set, the "
		 "message lists what was tried. Short-lived credentials (roles, tokens) "
		 "are renewed in the background before they expire. No credential, token "
		 "or signed query string is ever written to the log, a message or a "
		 "metric.", true);
	fputc('\n', out);
	for (int s = 0; s < STORE_COUNT; s++) {
		int step = 0;
		fputs(".SS ", out);
		man_text(out, stores[s].name, false);
		fputc('\n', out);
		man_text(out, stores[s].intro, true);
		fputc('\n', out);
		for (size_t i = 0; i < NROWS; i++)
			if (rows[i].store == (enum credential_store)s && rows[i].step)
				man_row(out, &rows[i], ++step);
		for (size_t i = 0; i < NROWS; i++)
			if (rows[i].store == (enum credential_store)s && !rows[i].step)
				man_row(out, &rows[i], 0);
	}
	fputs(".ad b\n.hy\n", out);
}

/* ---- Markdown ---- */

/* TEXT as one paragraph (its newlines are spaces), MARKER ("1. ", "- ",
 * "") before its first line, its next lines indented as far, wrapped
 * within MD_WIDTH columns where it can be; a word is never cut. */
static void md_paragraph(FILE *out, const char *marker, const char *text)
{
	size_t indent = strlen(marker), col = indent;
	bool first = true;

	fputs(marker, out);
	for (const char *p = text; *p;) {
		p += strspn(p, " \n");
		if (!*p)
			break;
		size_t len = strcspn(p, " \n");
		if (!first && col + 1 + len > MD_WIDTH) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', out);
			col++;
		}
		fwrite(p, 1, len, out);
		col += len;
		p += len;
		first = false;
	}
	fputc('\n', out);
}

/* "**SOURCE**: `A`, `B`. WHAT" into BUF (TEXT_MAX). */
static void md_item(char *buf, const struct credential_row *r)
{
	size_t n = (size_t)snprintf(buf, TEXT_MAX, "**%s**: ", r->source);
	for (const char *p = r->variables; p && *p && n < TEXT_MAX;) {
		size_t len = strcspn(p, " ");
		const char *next = p + len + strspn(p + len, " ");
		n += (size_t)snprintf(buf + n, TEXT_MAX - n, "`%.*s`%s", (int)len, p,
				      *next ? ", " : ". ");
		p = next;
	}
	if (n < TEXT_MAX)
		snprintf(buf + n, TEXT_MAX - n, "%s", r->what);
}

void credentials_table_markdown(FILE *out)
{
	static char text[TEXT_MAX];

	fputs(CREDENTIALS_TABLE_BEGIN "\n", out);
	for (int s = 0; s < STORE_COUNT; s++) {
		int step = 0;
		bool settings = false;
		fprintf(out, "\n### %s\n\n", stores[s].name);
		md_paragraph(out, "", stores[s].intro);
		for (size_t i = 0; i < NROWS; i++) {
			const struct credential_row *r = &rows[i];
			char marker[16];
			if (r->store != (enum credential_store)s || !r->step)
				continue;
			snprintf(marker, sizeof(marker), "%d. ", ++step);
			if (step == 1)
				fputc('\n', out);
			md_item(text, r);
			md_paragraph(out, marker, text);
		}
		for (size_t i = 0; i < NROWS; i++) {
			const struct credential_row *r = &rows[i];
			if (r->store != (enum credential_store)s || r->step)
				continue;
			if (!settings && step)
				fputs("\nAlso read:\n", out);
			if (!settings)
				fputc('\n', out);
			settings = true;
			md_item(text, r);
			md_paragraph(out, "- ", text);
		}
	}
	fputs("\n" CREDENTIALS_TABLE_END "\n", out);
}
