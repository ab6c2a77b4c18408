/*
 * crc32c.c - CRC32C with the SSE4.2 instruction where the CPU has it, and a
 * slicing-by-8 table otherwise. Both give the same value (see test_crc32c).
 */
#include "cache/store/crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_build(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		table[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++)
		for (int k = 1; k < 8; k++)
			table[k][n] = (table[k - 1][n] >> 8) ^ table[0][table[k - 1][n] & 0xff];
}

static uint32_t crc32c_soft(uint32_t crc, const unsigned char *p, size_t len)
{
	pthread_once(&table_once, table_build);
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= crc;
		crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^
		      table[5][(w >> 16) & 0xff] ^ table[4][(w >> 24) & 0xff] ^
		      table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
		      table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/*
 * The crc32 instruction takes 3 cycles and can start one a cycle, so the
 * hardware path runs three streams over three adjacent blocks and joins
 * them: the CRC register is linear, so the register after A then B is
 * the register after A moved past |B| zero bytes, xor B's register from
 * 0. Moving past a fixed length is a 32x32 matrix over GF(2), applied by
 * byte through four tables (shift_long, shift_short).
 */
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256

static uint32_t shift_long[4][256], shift_short[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec)
{
	uint32_t sum = 0;
	for (; vec; vec >>= 1, mat++)
		if (vec & 1)
			sum ^= *mat;
	return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat)
{
	for (int n = 0; n < 32; n++)
		square[n] = gf2_times(mat, mat[n]);
}

/* ZEROS: the operator moving a register past LEN zero bytes, by byte. */
static void shift_table(uint32_t zeros[4][256], size_t len)
{
	uint32_t odd[32], even[32], op[32];

	odd[0] = 0x82f63b78u;		/* one zero bit */
	for (int n = 1; n < 32; n++)
		odd[n] = 1u << (n - 1);
	gf2_square(even, odd);		/* two zero bits */
	gf2_square(odd, even);		/* four */
	for (int n = 0; n < 32; n++)
		op[n] = 1u << n;	/* identity */
	/* op = odd^(len*2) by squaring: odd holds four bits, then a byte... */
	for (bool have = false; len; len >>= 1) {
		gf2_square(even, odd);
		memcpy(odd, even, sizeof(odd));
		if (len & 1) {
			if (have) {
				uint32_t next[32];
				for (int n = 0; n < 32; n++)
					next[n] = gf2_times(odd, op[n]);
				memcpy(op, next, sizeof(op));
			} else {
				memcpy(op, odd, sizeof(op));
				have = true;
			}
		}
	}
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++)
			zeros[k][b] = gf2_times(op, b << (8 * k));
}

static void shift_build(void)
{
	shift_table(shift_long, LONG_BLOCK);
	shift_table(shift_short, SHORT_BLOCK);
}

static uint32_t shift(const uint32_t zeros[4][256], uint32_t crc)
{
	return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^
	       zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

__attribute__((target("sse4.2")))
static uint64_t crc_words(uint64_t c, const unsigned char *p, size_t words)
{
	for (size_t i = 0; i < words; i++) {
		uint64_t w;
		memcpy(&w, p + 8 * i, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	return c;
}

/* Three streams over BLOCK bytes each, while 3 * BLOCK bytes are left. */
__attribute__((target("sse4.2")))
static uint64_t crc_three(uint64_t c, const unsigned char **pp, size_t *lenp, size_t block,
			  const uint32_t zeros[4][256])
{
	const unsigned char *p = *pp;
	size_t len = *lenp;

	while (len >= 3 * block) {
		uint64_t c1 = 0, c2 = 0;
		for (size_t i = 0; i < block; i += 8) {
			uint64_t a, b, d;
			memcpy(&a, p + i, 8);
			memcpy(&b, p + block + i, 8);
			memcpy(&d, p + 2 * block + i, 8);
			c = __builtin_ia32_crc32di(c, a);
			c1 = __builtin_ia32_crc32di(c1, b);
			c2 = __builtin_ia32_crc32di(c2, d);
		}
		c = shift(zeros, (uint32_t)c) ^ c1;
		c = shift(zeros, (uint32_t)c) ^ c2;
		p += 3 * block;
		len -= 3 * block;
	}
	*pp = p;
	*lenp = len;
	return c;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	pthread_once(&shift_once, shift_build);
	uint64_t c = crc;
	c = crc_three(c, &p, &len, LONG_BLOCK, shift_long);
	c = crc_three(c, &p, &len, SHORT_BLOCK, shift_short);
	c = crc_words(c, p, len / 8);
	p += len / 8 * 8;
	len %= 8;
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}

static atomic_int sse42 = -1;	/* -1: not asked yet; any thread may ask */

static int have_sse42(void)
{
	int cached = atomic_load_explicit(&sse42, memory_order_relaxed);
	if (cached < 0) {
		__builtin_cpu_init();
		cached = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		atomic_store_explicit(&sse42, cached, memory_order_relaxed);
	}
	return cached;
}
#endif

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc = ~crc;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (have_sse42())
		return ~crc32c_hw(crc, buf, len);
#endif
	return ~crc32c_soft(crc, buf, len);
}

uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	return ~crc32c_soft(~crc, buf, len);
}
