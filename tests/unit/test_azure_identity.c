/* test_azure_identity.c - which Azure token source the environment names
 * (azure_identity_init), in the Azure SDKs' order, and the requests it
 * would make; nothing here is fetched. */
#include "cache/origin/providers/azure_identity.h"
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const vars[] = { "IDENTITY_ENDPOINT", "IDENTITY_HEADER",
				    "AZURE_POD_IDENTITY_AUTHORITY_HOST", "AZURE_CLIENT_ID",
				    "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET",
				    "AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST" };

static void clear(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

int main(void)
{
	struct azure_identity id;
	char err[256];

	clear();
	CHECK(azure_identity_init(&id, err, sizeof(err)) == 0 &&
	      strcmp(id.url, "http://169.254.169.254/metadata/identity/oauth2/token?"
		     "api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F") == 0 &&
	      !id.header_env && !id.secret_env && !id.assertion_env,
	      "nothing set: IMDS, system-assigned: %s", id.url);

	setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://127.0.0.1:8080/", 1);
	setenv("AZURE_CLIENT_ID", "a b&c", 1);
	CHECK(azure_identity_init(&id, err, sizeof(err)) == 0 &&
	      strncmp(id.url, "http://127.0.0.1:8080/metadata/identity/", 40) == 0 &&
	      strstr(id.url, "&client_id=a%20b%26c"), "IMDS moved, client_id encoded: %s", id.url);

	setenv("IDENTITY_ENDPOINT", "http://127.0.0.1:9/msi/token", 1);
	setenv("IDENTITY_HEADER", "h", 1);
	CHECK(azure_identity_init(&id, err, sizeof(err)) == 0 &&
	      strncmp(id.url, "http://127.0.0.1:9/msi/token?api-version=2019-08-01&", 52) == 0 &&
	      id.header_env && strcmp(id.header_env, "IDENTITY_HEADER") == 0 &&
	      !strstr(id.url, "h&"), "App Service before IMDS, its header not in the URL: %s",
	      id.url);
	setenv("IDENTITY_ENDPOINT", "file:///etc/passwd", 1);
	CHECK(azure_identity_init(&id, err, sizeof(err)) == -EINVAL && strstr(err, "IDENTITY_ENDPOINT"),
	      "an IDENTITY_ENDPOINT that is not http(s): refused: %s", err);

	setenv("AZURE_TENANT_ID", "tenant-1", 1);
	setenv("AZURE_FEDERATED_TOKEN_FILE", "/var/run/token", 1);
	CHECK(azure_identity_init(&id, err, sizeof(err)) == 0 && id.assertion_env &&
	      strcmp(id.url, "https://login.microsoftonline.com/tenant-1/oauth2/v2.0/token") == 0 &&
	      !strstr(id.form, "assertion"), "workload identity before a managed identity: %s",
	      id.url);
	setenv("AZURE_CLIENT_SECRET", "very-secret", 1);
	CHECK(azure_identity_init(&id, err, sizeof(err)) == 0 && id.secret_env &&
	      !strstr(id.form, "very-secret") && !strstr(id.url, "very-secret") &&
	      strstr(id.form, "scope=https%3A%2F%2Fstorage.azure.com%2F.default"),
	      "a client secret first; kept out of the URL and the stored form: %s", id.form);
	setenv("AZURE_AUTHORITY_HOST", "http://login.example.com", 1);
	CHECK(azure_identity_init(&id, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "AZURE_AUTHORITY_HOST"), "a secret never goes to a plain http authority");
	setenv("AZURE_AUTHORITY_HOST", "http://127.0.0.1:7000/", 1);
	CHECK(azure_identity_init(&id, err, sizeof(err)) == 0 &&
	      strcmp(id.url, "http://127.0.0.1:7000/tenant-1/oauth2/v2.0/token") == 0,
	      "but may to a loopback emulator: %s", id.url);
	clear();
	return check_done();
}
