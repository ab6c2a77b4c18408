/*
 * test_sigv4.c - Signature V4 against every case of the published AWS
 * test suite in tests/data/vectors/aws-sigv4 (or $TILEFS_SIGV4_VECTORS):
 * canonical request, string to sign and signature, header signing.
 */
#include "cache/origin/crypto.h"
#include "cache/origin/url.h"
#include "cache/origin/sigv4.h"
#include "check.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *dir, const char *name)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The string or boolean value of "key" in a flat JSON text, into out. */
static int json_value(const char *json, const char *key, char *out, size_t size)
{
	char pattern[128];
	snprintf(pattern, sizeof(pattern), "\"%s\"", key);
	const char *p = strstr(json, pattern);
	if (!p)
		return -1;
	p = strchr(p + strlen(pattern), ':');
	if (!p)
		return -1;
	p++;
	while (*p == ' ')
		p++;
	size_t n = *p == '"' ? strcspn(p + 1, "\"") : strcspn(p, ",\n}");
	const char *v = *p == '"' ? p + 1 : p;
	if (n >= size)
		return -1;
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

static void run_case(const char *root, const char *name)
{
	char dir[1024], ak[128] = "", sk[128] = "", token[1024] = "", region[64] = "",
	     service[64] = "", ts[64] = "", normalize[16] = "", sign_body[16] = "",
	     omit[16] = "false";
	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	char *ctx = slurp(dir, "context.json"), *req = slurp(dir, "request.txt");
	char *want_creq = slurp(dir, "header-canonical-request.txt");
	char *want_sts = slurp(dir, "header-string-to-sign.txt");
	char *want_sig = slurp(dir, "header-signature.txt");
	if (!ctx || !req || !want_creq || !want_sts || !want_sig) {
		CHECK(0, "%s: vector files readable", name);
		goto out;
	}
	json_value(ctx, "access_key_id", ak, sizeof(ak));
	json_value(ctx, "secret_access_key", sk, sizeof(sk));
	json_value(ctx, "token", token, sizeof(token));
	json_value(ctx, "region", region, sizeof(region));
	json_value(ctx, "service", service, sizeof(service));
	json_value(ctx, "timestamp", ts, sizeof(ts));
	json_value(ctx, "normalize", normalize, sizeof(normalize));
	json_value(ctx, "sign_body", sign_body, sizeof(sign_body));
	json_value(ctx, "omit_session_token", omit, sizeof(omit));

	/* "2015-08-30T12:36:00Z" -> "20150830T123600Z" */
	char stamp[32];
	snprintf(stamp, sizeof(stamp), "%.4s%.2s%.2sT%.2s%.2s%.2sZ", ts, ts + 5, ts + 8, ts + 11,
		 ts + 14, ts + 17);

	/* request line, headers (with folded continuation lines), body */
	/* "METHOD TARGET HTTP/1.1": the target may hold spaces */
	char method[16] = "", target[2048] = "";
	char *line_end = strchr(req, '\n');
	const char *sp = strchr(req, ' ');
	const char *proto = line_end ? memmem(req, (size_t)(line_end - req), " HTTP/", 6) : NULL;
	if (sp && proto && proto > sp) {
		snprintf(method, sizeof(method), "%.*s", (int)(sp - req), req);
		snprintf(target, sizeof(target), "%.*s", (int)(proto - sp - 1), sp + 1);
	}
	struct sigv4_header headers[32];
	char names[32][128], values[32][1024];
	size_t nh = 0;
	char *p = line_end ? line_end + 1 : req + strlen(req);
	const char *body = "";
	while (*p) {
		char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len > 0 && p[len - 1] == '\r')
			len--;
		if (len == 0) {
			body = eol ? eol + 1 : "";
			break;
		}
		if ((*p == ' ' || *p == '\t') && nh > 0) {
			size_t have = strlen(values[nh - 1]);
			snprintf(values[nh - 1] + have, sizeof(values[0]) - have, " %.*s", (int)len, p);
		} else if (nh < 32) {
			const char *colon = memchr(p, ':', len);
			size_t nlen = colon ? (size_t)(colon - p) : len;
			snprintf(names[nh], sizeof(names[0]), "%.*s", (int)nlen, p);
			snprintf(values[nh], sizeof(values[0]), "%.*s",
				 colon ? (int)(len - nlen - 1) : 0, colon ? colon + 1 : "");
			nh++;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	for (size_t i = 0; i < nh; i++) {
		headers[i].name = names[i];
		headers[i].value = values[i];
	}

	char *query = strchr(target, '?');
	if (query)
		*query++ = '\0';
	if (strcmp(normalize, "true") == 0)
		sigv4_normalize_path(target);
	char *uri = url_encode(target, true);

	uint8_t digest[SHA256_LEN];
	char body_hash[2 * SHA256_LEN + 1];
	sha256(body, strlen(body), digest);
	hex_encode(digest, SHA256_LEN, body_hash);

	struct sigv4_credentials cred = { ak, sk,
					  token[0] && strcmp(omit, "true") != 0 ? token : NULL };
	struct sigv4_input in = {
		.method = method, .canonical_uri = uri, .query = query,
		.headers = headers, .nheaders = nh,
		.payload_hash = body_hash,
		.payload_header = strcmp(sign_body, "true") == 0,
		.timestamp = stamp, .region = region, .service = service,
	};
	struct sigv4_output *out = malloc(sizeof(*out));
	int rc = sigv4_sign(&sigv4_aws, &cred, &in, out);
	CHECK(rc == 0, "%s: signs", name);
	CHECK(strcmp(out->canonical_request, want_creq) == 0, "%s: canonical request%s%s", name,
	      strcmp(out->canonical_request, want_creq) ? "\n# got:\n" : "",
	      strcmp(out->canonical_request, want_creq) ? out->canonical_request : "");
	CHECK(strcmp(out->string_to_sign, want_sts) == 0, "%s: string to sign", name);
	CHECK(strcmp(out->signature, want_sig) == 0, "%s: signature", name);
	free(out);
	free(uri);
out:
	free(ctx);
	free(req);
	free(want_creq);
	free(want_sts);
	free(want_sig);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(void)
{
	const char *root = getenv("TILEFS_SIGV4_VECTORS");
	if (!root)
		root = "tests/data/vectors/aws-sigv4";
	struct dirent **entries;
	int n = scandir(root, &entries, NULL, by_name);
	CHECK(n > 2, "vectors found in %s", root);
	int cases = 0;
	for (int i = 0; i < n; i++) {
		if (entries[i]->d_name[0] != '.') {
			run_case(root, entries[i]->d_name);
			cases++;
		}
		free(entries[i]);
	}
	free(n > 0 ? entries : NULL);
	CHECK(cases >= 30, "%d cases run", cases);

	/* the GCS flavour: same algorithm, its own names */
	struct sigv4_credentials cred = { "GOOGTS7C7FUP3AIRVJTE2BCD", "secret", NULL };
	struct sigv4_header h[] = { { "host", "storage.googleapis.com" } };
	struct sigv4_input in = { .method = "GET", .canonical_uri = "/bucket/a.tif",
				  .headers = h, .nheaders = 1, .payload_header = true,
				  .timestamp = "20261122T101500Z", .region = "auto",
				  .service = "storage" };
	struct sigv4_output *out = malloc(sizeof(*out));
	CHECK(sigv4_sign(&sigv4_goog, &cred, &in, out) == 0, "GOOG4 signs");
	CHECK(strstr(out->authorization, "GOOG4-HMAC-SHA256 Credential=GOOGTS7C7FUP3AIRVJTE2BCD/"
			"20261122/auto/storage/goog4_request") == out->authorization,
	      "GOOG4 authorization: %s", out->authorization);
	CHECK(strstr(out->canonical_request, "x-goog-date:20261122T101500Z\n") &&
	      strstr(out->canonical_request, "x-goog-content-sha256:") &&
	      strcmp(out->date_header, "x-goog-date: 20261122T101500Z") == 0,
	      "GOOG4 uses x-goog- headers");
	free(out);
	return check_done();
}
