/*
 * fuzz_imds.c - libFuzzer target for what the S3 provider reads from the
 * EC2 instance metadata service (IMDSv2, cache/origin/providers/aws_creds.c):
 * the session token, the role's name, the role's credentials document and
 * the instance profile's (JSON objects, parsed by cache/origin/json.c over
 * json-c). Linked with -Wl,--wrap=http_fetch_once, so that the provider's
 * requests are answered here, from the input, instead of by a server: the
 * input is the credentials document, or "TOKEN\0ROLE\0DOCUMENT" to give the
 * first two answers as well, or "TOKEN\0ROLE\0DOCUMENT\0INFO" the fourth
 * too (a part left out is a sound answer). An s3:// source is opened with
 * no other credentials, then a request is signed (which renews credentials
 * about to expire, asking again; keys already expired and not renewed
 * refuse to sign, EACCES). The provider must ask for nothing but the four
 * documented paths, the role's under the name it was given; the credentials
 * it signs with must come from the document, and every header it sends
 * must be one printable line (a CR or LF would add headers of the
 * service's choosing). Anything else (a crash, a sanitizer report, a leak)
 * is a bug. Seeds: tests/fuzz/seeds/fuzz_imds/ (documents as AWS shows
 * them). Built and run by tests/fuzz/run.
 */
#include "cache/base/log.h"
#include "cache/origin/json.h"
#include "cache/origin/providers/provider.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BASE "http://169.254.169.254"

/* The answers of this run, borrowed from the input. */
static struct {
	const char *part[4];	/* token, role, document, instance profile */
	size_t len[4];
	char role[256];		/* the role's name as the provider reads it */
	int asked;		/* requests seen */
} imds;

int __wrap_http_fetch_once(const struct http_config *cfg, struct http_request *req);

static void headers_check(struct curl_slist *h)
{
	for (; h; h = h->next)
		for (const char *p = h->data; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				abort();	/* not one printable line */
}

/* Answer REQ as the metadata service would, from the input. */
int __wrap_http_fetch_once(const struct http_config *cfg, struct http_request *req)
{
	static const char token_path[] = BASE "/latest/api/token";
	static const char roles_path[] = BASE "/latest/meta-data/iam/security-credentials/";
	static const char info_path[] = BASE "/latest/meta-data/iam/info";
	struct http_attempt a = { .method = req->method ? req->method : "GET", .url = req->url };
	struct curl_slist *sent = NULL;
	int part;

	if (++imds.asked > 8)
		abort();	/* two rounds of four at most */
	if (strcmp(req->url, token_path) == 0 && req->method && strcmp(req->method, "PUT") == 0) {
		part = 0;
	} else if (strcmp(req->url, roles_path) == 0 && !req->method) {
		part = 1;
	} else if (strcmp(req->url, info_path) == 0 && !req->method) {
		part = 3;
	} else if (strncmp(req->url, roles_path, sizeof(roles_path) - 1) == 0 && !req->method) {
		/* the role's name as the provider took it from the answer
		   before: up to the line's end, cut to fit its buffers */
		size_t n = strcspn(imds.part[1], "\r\n");
		const char *name = req->url + sizeof(roles_path) - 1;
		if (strlen(name) > n || strncmp(name, imds.part[1], strlen(name)) != 0)
			abort();
		part = 2;
	} else {
		abort();	/* a request the service does not answer */
	}
	if (!req->sign || req->sign(req->signer, &a, &sent) != 0)
		abort();
	headers_check(sent);
	curl_slist_free_all(sent);

	req->status = 200;
	req->err = 0;
	if (imds.len[part] > cfg->max_body) {
		req->err = -EIO;	/* as http.c: "response larger than ..." */
		return req->err;
	}
	req->body = malloc(imds.len[part] + 1);
	if (!req->body)
		return req->err = -ENOMEM;
	memcpy(req->body, imds.part[part], imds.len[part]);
	req->body_len = imds.len[part];
	return 0;
}

static const char sound_token[] = "AQAEAFpKLfFyNt2gtiXHOqTQ-nbDqFJH7cROhHSxyT3GZgt6CjUt0w==";
static const char sound_role[] = "tilefs-role";
static const char sound_info[] = "{\"Code\": \"Success\", \"InstanceProfileArn\": "
				 "\"arn:aws:iam::123456789012:instance-profile/tilefs-role\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct source_options opts = { 0 };
	struct source *src = NULL;
	char err[512];

	if (!ready) {
		log_set_level(LOG_ERROR);
		if (log_set_file("/dev/null") < 0)
			abort();
		unsetenv("AWS_ACCESS_KEY_ID");
		unsetenv("AWS_SECRET_ACCESS_KEY");
		unsetenv("AWS_SESSION_TOKEN");
		unsetenv("AWS_PROFILE");
		unsetenv("AWS_EC2_METADATA_DISABLED");
		setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
		setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
		setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", BASE, 1);
		setenv("AWS_REGION", "us-east-1", 1);
		ready = true;
	}
	/* the input, NUL-terminated (the provider reads the bodies as strings) */
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	const char *nul1 = memchr(text, '\0', size), *nul2 = NULL, *nul3 = NULL;
	if (nul1)
		nul2 = memchr(nul1 + 1, '\0', size - (size_t)(nul1 + 1 - text));
	if (nul2)
		nul3 = memchr(nul2 + 1, '\0', size - (size_t)(nul2 + 1 - text));
	memset(&imds, 0, sizeof(imds));
	imds.part[3] = sound_info;
	imds.len[3] = strlen(sound_info);
	if (nul1 && nul2) {
		imds.part[0] = text;
		imds.len[0] = (size_t)(nul1 - text);
		imds.part[1] = nul1 + 1;
		imds.len[1] = (size_t)(nul2 - nul1 - 1);
		imds.part[2] = nul2 + 1;
		imds.len[2] = (nul3 ? (size_t)(nul3 - text) : size) - (size_t)(nul2 + 1 - text);
		if (nul3) {
			imds.part[3] = nul3 + 1;
			imds.len[3] = size - (size_t)(nul3 + 1 - text);
		}
	} else {
		imds.part[0] = sound_token;
		imds.len[0] = strlen(sound_token);
		imds.part[1] = sound_role;
		imds.len[1] = strlen(sound_role);
		imds.part[2] = text;
		imds.len[2] = size;
	}

	if (source_open("s3://bucket/prefix", &opts, &src, err, sizeof(err)) == 0) {
		/* sign a GET as the fetch thread would */
		char *url = source_object_url(src, "scene.tif");
		struct http_request req = { .url = url };
		struct http_attempt a = { .method = "GET", .url = url, .ranged = true,
					  .first = 0, .last = 65535 };
		struct curl_slist *sent = NULL;
		if (!url)
			abort();
		source_prepare(src, &req);
		if (!req.sign)
			abort();
		int signed_rc = req.sign(req.signer, &a, &sent);
		if (signed_rc == -EACCES && !sent)
			goto done;	/* expired, and the second round too */
		if (signed_rc != 0)
			abort();
		headers_check(sent);
		/* the key id and token it signs with are the document's, as a
		   JSON parser reads them (escapes undone) */
		struct json_doc *doc = NULL;
		static char key_id[256], token[4096];
		if (json_doc_parse(imds.part[2], imds.len[2], &doc) != 0 ||
		    json_doc_string(doc, "AccessKeyId", key_id, sizeof(key_id)) != 0)
			abort();	/* signed with keys from no document */
		if (json_doc_string(doc, "Token", token, sizeof(token)) != 0)
			token[0] = '\0';
		json_doc_free(doc);
		bool token_sent = false;
		for (struct curl_slist *h = sent; h; h = h->next) {
			const char *v;
			if (strncasecmp(h->data, "x-amz-security-token: ", 22) == 0) {
				if (strcmp(h->data + 22, token) != 0)
					abort();
				token_sent = true;
			} else if (strncasecmp(h->data, "authorization: ", 15) == 0 &&
				   (v = strstr(h->data, "Credential="))) {
				v += 11;
				if (strncmp(v, key_id, strlen(key_id)) != 0 || v[strlen(key_id)] != '/')
					abort();
			}
		}
		if (token_sent != (token[0] != '\0'))
			abort();
		for (const char *p = src->credentials; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				abort();	/* shown in messages: one printable line */
done:
		curl_slist_free_all(sent);
		free(url);
		source_free(src);
	}
	free(text);
	return 0;
}
