/* test_json.c - the origin's bounded JSON documents (json.c over json-c):
 * what a credentials endpoint may answer, well-formed or not. */
#include "cache/origin/json.h"
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The string of KEY in the document TEXT into out: json_doc_string()'s
 * result, or 1 when TEXT does not parse. */
static int string_of(const char *text, const char *key, char *out, size_t size)
{
	struct json_doc *doc;
	int rc = json_doc_parse(text, strlen(text), &doc);

	if (rc)
		return 1;
	rc = json_doc_string(doc, key, out, size);
	json_doc_free(doc);
	return rc;
}

static int parses(const char *text)
{
	struct json_doc *doc = NULL;
	int rc = json_doc_parse(text, strlen(text), &doc);
	json_doc_free(doc);
	return rc;
}

int main(void)
{
	char v[64];

	CHECK(string_of("{\"Token\": \"a\\/b\\\"c\\u0041\"}", "Token", v, sizeof(v)) == 0 &&
	      strcmp(v, "a/b\"cA") == 0, "escapes are undone: %s", v);
	CHECK(string_of("{\"Inner\": {\"Token\": \"nested\"}, \"Token\": \"top\"}", "Token", v,
			sizeof(v)) == 0 && strcmp(v, "top") == 0,
	      "a key nested in another object is not the top's: %s", v);
	CHECK(string_of("{\"Code\": \"\\\"Token\\\": \\\"fake\\\"\"}", "Token", v, sizeof(v)) ==
	      -ENOENT, "a value that reads like a key is a value");
	CHECK(string_of("{\"Token\": \"a\\nb\"}", "Token", v, sizeof(v)) == -EINVAL,
	      "a control character (escaped) is refused: it would end a header line");
	CHECK(string_of("{\"Token\": \"a\\u0000b\"}", "Token", v, sizeof(v)) == -EINVAL,
	      "an escaped NUL is refused");
	CHECK(string_of("{\"Token\": 12}", "Token", v, sizeof(v)) == -EINVAL,
	      "a number is not a string");
	CHECK(string_of("{\"Token\": \"0123456789\"}", "Token", v, 10) == -ENAMETOOLONG,
	      "a value that does not fit is refused, not cut");

	CHECK(parses(" {\"a\": 1}\n") == 0, "white space around the object");
	CHECK(parses("{\"a\": 1} x") == -EINVAL, "trailing bytes are refused");
	CHECK(parses("{\"a\": 1}{\"b\": 2}") == -EINVAL, "two documents are refused");
	CHECK(parses("[1, 2]") == -EINVAL, "an array is not an object");
	CHECK(parses("{\"a\": ") == -EINVAL, "a cut document is refused");
	CHECK(parses("{\"a\": [[[[[[[[[[1]]]]]]]]]]}") == -EINVAL, "nesting past the bound");
	CHECK(parses("{\"a\": [[[[[[1]]]]]]}") == 0, "nesting within the bound");

	struct json_doc *doc;
	const char with_nul[] = "{\"a\": \"b\0c\"}";
	CHECK(json_doc_parse(with_nul, sizeof(with_nul) - 1, &doc) == -EINVAL,
	      "a NUL byte in the document is refused");
	char *big = malloc(JSON_MAX_DOCUMENT + 2);
	if (big) {
		memset(big, ' ', JSON_MAX_DOCUMENT + 1);
		memcpy(big, "{}", 2);
		CHECK(json_doc_parse(big, JSON_MAX_DOCUMENT + 1, &doc) == -E2BIG,
		      "a document over the bound is not parsed");
		free(big);
	}

	int64_t n;
	CHECK(json_doc_parse("{\"Version\": 1, \"S\": \"1\"}", 24, &doc) == 0,
	      "a document with numbers");
	CHECK(json_doc_int(doc, "Version", &n) == 0 && n == 1, "an integer");
	CHECK(json_doc_int(doc, "S", &n) == -EINVAL, "a string is not an integer");
	CHECK(json_doc_int(doc, "None", &n) == -ENOENT, "absent");
	json_doc_free(doc);

	/* the SSO portal's answer nests its credentials one level down */
	struct json_doc *inner;
	const char *nested = "{\"roleCredentials\": {\"accessKeyId\": \"AK\", "
			     "\"expiration\": 1700000000000}, \"flat\": 3}";
	CHECK(json_doc_parse(nested, strlen(nested), &doc) == 0, "a nested document");
	CHECK(json_doc_object(doc, "flat", &inner) == -EINVAL && !inner,
	      "a number is not an object");
	CHECK(json_doc_object(doc, "none", &inner) == -ENOENT, "absent object");
	CHECK(json_doc_object(doc, "roleCredentials", &inner) == 0, "the inner object");
	json_doc_free(doc);	/* the inner one holds its own reference */
	CHECK(json_doc_string(inner, "accessKeyId", v, sizeof(v)) == 0 && strcmp(v, "AK") == 0,
	      "a string of the inner object, the outer freed: %s", v);
	CHECK(json_doc_int(inner, "expiration", &n) == 0 && n == 1700000000000LL,
	      "a millisecond epoch fits");
	json_doc_free(inner);
	return check_done();
}
