/*
 * crypto.h - the few primitives request signing needs (S3 and GCS V4,
 * Azure Shared Key), on OpenSSL: SHA-256, HMAC-SHA256, hex and base64;
 * SHA-1 for a file name.
 * For cache/origin/providers/ (and sigv4.c): the only user of OpenSSL.
 *
 * Layer: the origin (cache/origin/), over cache/base/ and under its
 * providers. Includes cache/base/ and its own folder only; never the
 * providers (cache/origin/providers/), the store, the TIFF layer, the
 * engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_CRYPTO_H
#define TILEFS_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);
/* Lowercase hex of the SHA-1 of TEXT into OUT: a name, not a proof (the
 * AWS CLI names its SSO token cache files so). */
void sha1_hex(const char *text, char out[41]);
void hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		 uint8_t out[SHA256_LEN]);
/* Lowercase hex of LEN bytes into OUT (2 * len + 1 bytes). */
void hex_encode(const uint8_t *in, size_t len, char *out);
/* Base64 of LEN bytes; caller frees. NULL on allocation failure. */
char *base64_encode(const uint8_t *in, size_t len);
/* Decode base64 TEXT into OUT (holds out_size bytes); sets *len.
 * -EINVAL if TEXT is not base64 or does not fit. */
int base64_decode(const char *text, uint8_t *out, size_t out_size, size_t *len);

/*
 * An RSASSA-PKCS1-v1_5 SHA-256 signature (JWT's RS256) of LEN bytes at DATA
 * with the private key PEM (PKCS#8 or PKCS#1, unencrypted), into SIG
 * (SIG_SIZE bytes; 512 fit a 4096-bit key); *sig_len its length. 0, or
 * -EINVAL when PEM is not such a key, -ENOSPC when SIG is too small.
 */
int rs256_sign(const char *pem, const void *data, size_t len, uint8_t *sig, size_t sig_size,
	       size_t *sig_len);

#endif
