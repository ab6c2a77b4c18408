/*
 * crypto.c - see crypto.h.
 */
#include "cache/origin/crypto.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	unsigned int n = SHA256_LEN;
	EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}

void sha1_hex(const char *text, char out[41])
{
	uint8_t digest[20];
	unsigned int n = sizeof(digest);

	EVP_Digest(text, strlen(text), digest, &n, EVP_sha1(), NULL);
	hex_encode(digest, sizeof(digest), out);
}

void hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		 uint8_t out[SHA256_LEN])
{
	unsigned int n = SHA256_LEN;
	HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &n);
}

void hex_encode(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

char *base64_encode(const uint8_t *in, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);
	if (out)
		EVP_EncodeBlock((unsigned char *)out, in, (int)len);
	return out;
}

int base64_decode(const char *text, uint8_t *out, size_t out_size, size_t *len)
{
	size_t n = strlen(text);
	if (n % 4 != 0 || n / 4 * 3 > out_size + 2)
		return -EINVAL;
	unsigned char *tmp = malloc(n / 4 * 3 + 1);
	if (!tmp)
		return -ENOMEM;
	int got = EVP_DecodeBlock(tmp, (const unsigned char *)text, (int)n);
	if (got < 0) {
		free(tmp);
		return -EINVAL;
	}
	/* EVP_DecodeBlock keeps the padding's zero bytes: drop them */
	if (n >= 1 && text[n - 1] == '=')
		got--;
	if (n >= 2 && text[n - 2] == '=')
		got--;
	if ((size_t)got > out_size) {
		free(tmp);
		return -EINVAL;
	}
	memcpy(out, tmp, (size_t)got);
	*len = (size_t)got;
	free(tmp);
	return 0;
}

int rs256_sign(const char *pem, const void *data, size_t len, uint8_t *sig, size_t sig_size,
	       size_t *sig_len)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t n = 0;
	int err = -EINVAL;

	if (!key || !ctx || EVP_PKEY_base_id(key) != EVP_PKEY_RSA)
		goto out;
	if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(ctx, NULL, &n, data, len) != 1)
		goto out;
	if (n > sig_size) {
		err = -ENOSPC;
		goto out;
	}
	if (EVP_DigestSign(ctx, sig, &n, data, len) != 1)
		goto out;
	*sig_len = n;
	err = 0;
out:
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(key);
	BIO_free(bio);
	return err;
}
