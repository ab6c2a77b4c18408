/*
 * sigv4.c - see sigv4.h. Follows the published algorithm: canonical request,
 * string to sign, derived key, signature.
 */
#include "cache/origin/sigv4.h"
#include "cache/origin/crypto.h"
#include "cache/origin/url.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct sigv4_flavor sigv4_aws = { "AWS4-HMAC-SHA256", "AWS4", "aws4_request", "x-amz" };
const struct sigv4_flavor sigv4_goog = { "GOOG4-HMAC-SHA256", "GOOG4", "goog4_request", "x-goog" };

#define MAX_HEADERS 32
#define MAX_PARAMS 64

static const char empty_hash[] =
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

void sigv4_normalize_path(char *path)
{
	char *segs[256];
	size_t n = 0;
	bool trailing = strlen(path) > 1 && path[strlen(path) - 1] == '/';
	char *save = NULL;
	char *copy = strdup(path);

	if (!copy)
		return;
	for (char *s = strtok_r(copy, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		if (strcmp(s, ".") == 0)
			continue;
		if (strcmp(s, "..") == 0) {
			if (n > 0)
				n--;
			continue;
		}
		if (n < 256)
			segs[n++] = s;
	}
	char *o = path;
	*o++ = '/';
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(segs[i]);
		memmove(o, segs[i], len);
		o += len;
		if (i + 1 < n || trailing)
			*o++ = '/';
	}
	*o = '\0';
	free(copy);
}

/* Append to a bounded buffer; false once it overflows. */
struct buf {
	char *p;
	size_t size, len;
	bool overflow;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	if (b->overflow)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(b->p + b->len, b->size - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->size - b->len)
		b->overflow = true;
	else
		b->len += (size_t)n;
}

struct header {
	char name[128];
	char value[2200];
};

static int by_header_name(const void *a, const void *b)
{
	return strcmp(((const struct header *)a)->name, ((const struct header *)b)->name);
}

/* Lowercase name; trimmed value with inner runs of blanks folded to one. */
static void header_set(struct header *h, const char *name, const char *value)
{
	size_t i;
	for (i = 0; name[i] && i + 1 < sizeof(h->name); i++)
		h->name[i] = (char)tolower((unsigned char)name[i]);
	h->name[i] = '\0';
	size_t o = 0;
	bool blank = false;
	while (*value == ' ' || *value == '\t' || *value == '\n' || *value == '\r')
		value++;
	for (; *value && o + 1 < sizeof(h->value); value++) {
		bool is_blank = *value == ' ' || *value == '\t' || *value == '\n' || *value == '\r';
		if (is_blank) {
			blank = true;
			continue;
		}
		if (blank && o > 0)
			h->value[o++] = ' ';
		blank = false;
		if (o + 1 < sizeof(h->value))
			h->value[o++] = *value;
	}
	h->value[o] = '\0';
}

struct param {
	char *name, *value;	/* encoded */
};

static int by_param(const void *a, const void *b)
{
	const struct param *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->value, y->value);
}

/* Decode %XX (and nothing else) of a query part; caller frees. */
static char *query_decode(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '%' && i + 2 < len + 1 && isxdigit((unsigned char)s[i + 1]) &&
		    isxdigit((unsigned char)s[i + 2])) {
			char hex[3] = { s[i + 1], s[i + 2], 0 };
			*o++ = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

/* Canonical query string into b. */
static int canonical_query(struct buf *b, const char *query)
{
	struct param params[MAX_PARAMS];
	size_t n = 0;
	int err = 0;

	for (const char *p = query; p && *p;) {
		size_t len = strcspn(p, "&");
		if (len > 0) {
			if (n == MAX_PARAMS) {
				err = -ENAMETOOLONG;
				break;
			}
			const char *eq = memchr(p, '=', len);
			size_t name_len = eq ? (size_t)(eq - p) : len;
			char *name = query_decode(p, name_len);
			char *value = eq ? query_decode(eq + 1, len - name_len - 1) : strdup("");
			params[n].name = name ? url_encode(name, false) : NULL;
			params[n].value = value ? url_encode(value, false) : NULL;
			free(name);
			free(value);
			n++;
			if (!params[n - 1].name || !params[n - 1].value) {
				err = -ENOMEM;
				break;
			}
		}
		p += len;
		if (*p == '&')
			p++;
	}
	if (!err) {
		qsort(params, n, sizeof(params[0]), by_param);
		for (size_t i = 0; i < n; i++)
			put(b, "%s%s=%s", i ? "&" : "", params[i].name, params[i].value);
	}
	for (size_t i = 0; i < n; i++) {
		free(params[i].name);
		free(params[i].value);
	}
	return err;
}

int sigv4_sign(const struct sigv4_flavor *f, const struct sigv4_credentials *cred,
	       const struct sigv4_input *in, struct sigv4_output *out)
{
	struct header *h = calloc(MAX_HEADERS, sizeof(*h));
	size_t n = 0;
	char name[64];
	int err = 0;

	if (!h)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	const char *payload = in->payload_hash ? in->payload_hash : empty_hash;

	/* the caller's headers, then ours; same names merge in order, with ',' */
	for (size_t i = 0; i < in->nheaders + 3; i++) {
		const char *hn, *hv;
		if (i < in->nheaders) {
			hn = in->headers[i].name;
			hv = in->headers[i].value;
		} else if (i == in->nheaders) {
			snprintf(name, sizeof(name), "%s-date", f->header_prefix);
			hn = name;
			hv = in->timestamp;
			snprintf(out->date_header, sizeof(out->date_header), "%s: %s", hn, hv);
		} else if (i == in->nheaders + 1) {
			if (!cred->session_token)
				continue;
			snprintf(name, sizeof(name), "%s-security-token", f->header_prefix);
			hn = name;
			hv = cred->session_token;
			snprintf(out->token_header, sizeof(out->token_header), "%s: %s", hn, hv);
		} else {
			if (!in->payload_header)
				continue;
			snprintf(name, sizeof(name), "%s-content-sha256", f->header_prefix);
			hn = name;
			hv = payload;
			snprintf(out->payload_header, sizeof(out->payload_header), "%s: %s", hn, hv);
		}
		struct header cur;
		header_set(&cur, hn, hv);
		size_t k;
		for (k = 0; k < n && strcmp(h[k].name, cur.name) != 0; k++)
			;
		if (k < n) {
			size_t len = strlen(h[k].value);
			snprintf(h[k].value + len, sizeof(h[k].value) - len, ",%s", cur.value);
		} else if (n < MAX_HEADERS) {
			h[n++] = cur;
		} else {
			err = -ENAMETOOLONG;
			goto out;
		}
	}
	qsort(h, n, sizeof(*h), by_header_name);

	struct buf sh = { out->signed_headers, sizeof(out->signed_headers), 0, false };
	for (size_t i = 0; i < n; i++)
		put(&sh, "%s%s", i ? ";" : "", h[i].name);

	struct buf cr = { out->canonical_request, sizeof(out->canonical_request), 0, false };
	put(&cr, "%s\n%s\n", in->method, in->canonical_uri);
	err = canonical_query(&cr, in->query);
	if (err)
		goto out;
	put(&cr, "\n");
	for (size_t i = 0; i < n; i++)
		put(&cr, "%s:%s\n", h[i].name, h[i].value);
	put(&cr, "\n%s\n%s", out->signed_headers, payload);
	if (sh.overflow || cr.overflow) {
		err = -ENAMETOOLONG;
		goto out;
	}

	uint8_t digest[SHA256_LEN];
	char digest_hex[2 * SHA256_LEN + 1];
	char date[9];
	snprintf(date, sizeof(date), "%.8s", in->timestamp);
	sha256(out->canonical_request, cr.len, digest);
	hex_encode(digest, SHA256_LEN, digest_hex);
	struct buf sts = { out->string_to_sign, sizeof(out->string_to_sign), 0, false };
	put(&sts, "%s\n%s\n%s/%s/%s/%s\n%s", f->algorithm, in->timestamp, date, in->region,
	    in->service, f->terminator, digest_hex);

	/* kSigning = HMAC(HMAC(HMAC(HMAC(prefix + secret, date), region), service), term) */
	char secret[512];
	uint8_t k[SHA256_LEN];
	int slen = snprintf(secret, sizeof(secret), "%s%s", f->key_prefix, cred->secret_key);
	if (sts.overflow || slen < 0 || (size_t)slen >= sizeof(secret)) {
		err = -ENAMETOOLONG;
		goto out;
	}
	hmac_sha256(secret, (size_t)slen, date, strlen(date), k);
	hmac_sha256(k, SHA256_LEN, in->region, strlen(in->region), k);
	hmac_sha256(k, SHA256_LEN, in->service, strlen(in->service), k);
	hmac_sha256(k, SHA256_LEN, f->terminator, strlen(f->terminator), k);
	hmac_sha256(k, SHA256_LEN, out->string_to_sign, sts.len, digest);
	hex_encode(digest, SHA256_LEN, out->signature);
	memset(secret, 0, sizeof(secret));
	memset(k, 0, sizeof(k));

	struct buf auth = { out->authorization, sizeof(out->authorization), 0, false };
	put(&auth, "%s Credential=%s/%s/%s/%s/%s, SignedHeaders=%s, Signature=%s", f->algorithm,
	    cred->access_key, date, in->region, in->service, f->terminator, out->signed_headers,
	    out->signature);
	if (auth.overflow)
		err = -ENAMETOOLONG;
out:
	free(h);
	return err;
}
