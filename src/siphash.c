/*-------------------------------------------------------------------------
 *
 * siphash.c
 *	  SipHash-2-4 (siphash.h), written from the algorithm's description:
 *	  four 64-bit words of state initialised from the 128-bit key, two
 *	  rounds per 8-byte little-endian message word, the length in the top
 *	  byte of the last word, four rounds to finish.  Checked against the
 *	  reference test vector in test/ext (kizunasync_test.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "siphash.h"

#define ROTL(x, b)	(uint64) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND \
	do { \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
	} while (0)

/* 8 bytes as a little-endian word, whatever the machine's byte order */
static inline uint64
le64(const uint8 *p, size_t n)
{
	uint64		w = 0;
	size_t		i;

	for (i = 0; i < n; i++)
		w |= ((uint64) p[i]) << (8 * i);
	return w;
}

uint64
kz_siphash24(const uint8 *key, const void *data, size_t len)
{
	const uint8 *in = (const uint8 *) data;
	uint64		k0 = le64(key, 8);
	uint64		k1 = le64(key + 8, 8);
	uint64		v0 = UINT64CONST(0x736f6d6570736575) ^ k0;
	uint64		v1 = UINT64CONST(0x646f72616e646f6d) ^ k1;
	uint64		v2 = UINT64CONST(0x6c7967656e657261) ^ k0;
	uint64		v3 = UINT64CONST(0x7465646279746573) ^ k1;
	size_t		left = len;
	uint64		m;

	for (; left >= 8; in += 8, left -= 8)
	{
		m = le64(in, 8);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	m = le64(in, left) | (((uint64) (len & 0xff)) << 56);
	v3 ^= m;
	SIPROUND;
	SIPROUND;
	v0 ^= m;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}
