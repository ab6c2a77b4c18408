/* test_crc32c.c - CRC32C against published check values, both code paths. */
#include "cache/store/crc32c.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
	unsigned char zeros[32] = { 0 }, ones[32], inc[32];
	memset(ones, 0xff, sizeof(ones));
	for (int i = 0; i < 32; i++)
		inc[i] = (unsigned char)i;

	/* RFC 3720 appendix B.4 */
	CHECK(crc32c(0, "123456789", 9) == 0xe3069283, "check value of \"123456789\"");
	CHECK(crc32c(0, zeros, 32) == 0x8a9136aa, "32 zero bytes");
	CHECK(crc32c(0, ones, 32) == 0x62a8ab43, "32 0xff bytes");
	CHECK(crc32c(0, inc, 32) == 0x46dd794e, "32 incrementing bytes");
	CHECK(crc32c(0, "", 0) == 0, "empty input");

	unsigned char *big = malloc(1 << 20);
	for (int i = 0; i < 1 << 20; i++)
		big[i] = (unsigned char)(i * 2654435761u >> 13);
	uint32_t whole = crc32c(0, big, 1 << 20);
	CHECK(whole == crc32c_portable(0, big, 1 << 20), "hardware and table paths agree");
	uint32_t parts = crc32c(crc32c(0, big, 12345), big + 12345, (1 << 20) - 12345);
	CHECK(whole == parts, "extending in two pieces equals one pass");
	/* around the three-stream blocks (3 x 8192, 3 x 256 bytes), unaligned */
	static const size_t lens[] = { 7, 8, 767, 768, 769, 24575, 24576, 24577, 25344, 50000 };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		CHECK(crc32c(0, big + 3, lens[i]) == crc32c_portable(0, big + 3, lens[i]),
		      "both paths agree over %zu bytes", lens[i]);
	free(big);
	return check_done();
}
