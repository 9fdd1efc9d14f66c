/*-------------------------------------------------------------------------
 *
 * fuzz_cursor.c
 *	  libFuzzer target for the cursor token codec (src/cursor_core.c).
 *
 * Each input is used twice:
 *
 * 1. as a token: kz_cursor_parse must either refuse it with a reason, or
 *    accept it with a cursor that satisfies every rule of the grammar and
 *    encodes back to exactly the same bytes;
 * 2. as raw cursor fields: kz_cursor_encode must succeed exactly when
 *    kz_cursor_check accepts the fields, and what it writes must parse back
 *    to the same fields.
 *
 * Any broken property aborts, which libFuzzer records as a crash.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor_core.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
require(int cond, const char *what)
{
	if (!cond)
	{
		fprintf(stderr, "fuzz_cursor: property violated: %s\n", what);
		abort();
	}
}

static int
same_cursor(const KzCursor *a, const KzCursor *b)
{
	if (a->has_start != b->has_start || a->high_water != b->high_water ||
		a->nholes != b->nholes)
		return 0;
	if (a->has_start && a->start != b->start)
		return 0;
	return a->nholes == 0 ||
		memcmp(a->holes, b->holes, sizeof(int64_t) * (size_t) a->nholes) == 0;
}

static void
check_grammar(const KzCursor *c)
{
	int			i;

	require(!c->has_start || c->start >= 0, "start >= 0");
	require(c->high_water >= 0, "high-water >= 0");
	require(c->nholes >= 0 && c->nholes <= KZ_CURSOR_MAX_HOLES, "hole count in range");
	for (i = 0; i < c->nholes; i++)
	{
		require(c->holes[i] >= 1, "hole >= 1");
		require(c->holes[i] < c->high_water, "hole < high-water");
		require(i == 0 || c->holes[i] > c->holes[i - 1], "holes ascend");
	}
}

/* Property 1: parse, then encode must give the same bytes. */
static void
fuzz_parse(const uint8_t *data, size_t size)
{
	static KzCursor c;
	static KzCursor again;
	static char buf[KZ_CURSOR_BUFSIZE];
	const char *why = NULL;
	size_t		n;

	if (kz_cursor_parse((const char *) data, size, &c, &why) != KZ_CURSOR_OK)
	{
		require(why != NULL && why[0] != '\0', "a refusal has a reason");
		require(size <= KZ_CURSOR_MAX_LEN ||
				kz_cursor_parse((const char *) data, size, &c, NULL) == KZ_CURSOR_TOO_LONG,
				"an overlong token is refused for its length");
		return;
	}

	require(size >= 1 && size <= KZ_CURSOR_MAX_LEN, "accepted length in range");
	check_grammar(&c);
	require(kz_cursor_check(&c, &why) == KZ_CURSOR_OK, "accepted cursor passes check");

	n = kz_cursor_encode(&c, buf, sizeof(buf), &why);
	require(n == size, "round trip keeps the length");
	require(memcmp(buf, data, size) == 0, "round trip keeps the bytes");
	require(buf[n] == '\0', "encode terminates the token");

	require(kz_cursor_parse(buf, n, &again, &why) == KZ_CURSOR_OK &&
			same_cursor(&c, &again), "re-parse gives the same cursor");

	/* one byte short of the NUL must fail cleanly (this clobbers buf) */
	require(kz_cursor_encode(&c, buf, n, &why) == 0, "encode refuses a short buffer");
}

static int64_t
take_int64(const uint8_t **p, size_t *left)
{
	uint64_t	v = 0;
	size_t		i;

	for (i = 0; i < 8 && *left > 0; i++, (*p)++, (*left)--)
		v |= (uint64_t) **p << (8 * i);
	/* the low two bits pick a region: the edges matter more than the middle */
	switch (v & 3)
	{
		case 0:
			return (int64_t) v;	/* anything, negative included */
		case 1:
			return (int64_t) ((v >> 2) & 0x3f);	/* small */
		case 2:
			return INT64_MAX - (int64_t) ((v >> 2) & 0x3f);	/* near the top */
		default:
			return -(int64_t) ((v >> 2) & 0x3f);	/* small negative or zero */
	}
}

/* Property 2: fields that pass the check encode, and parse back unchanged. */
static void
fuzz_encode(const uint8_t *data, size_t size)
{
	static KzCursor c;
	static KzCursor back;
	static char buf[KZ_CURSOR_BUFSIZE];
	const uint8_t *p = data;
	size_t		left = size;
	const char *why = NULL;
	uint8_t		flags;
	size_t		n;
	int			ok;

	if (size < 2)
		return;
	flags = *p++;
	left--;
	c.has_start = (flags & 1) != 0;
	c.start = take_int64(&p, &left);
	c.high_water = take_int64(&p, &left);
	c.nholes = 0;
	while (left > 0 && c.nholes < KZ_CURSOR_MAX_HOLES)
		c.holes[c.nholes++] = take_int64(&p, &left);
	if (flags & 2)
		kz_cursor_sort_holes(&c);

	ok = kz_cursor_check(&c, &why) == KZ_CURSOR_OK;
	n = kz_cursor_encode(&c, buf, sizeof(buf), &why);
	if (!ok)
	{
		require(n == 0, "encode refuses what check refuses");
		return;
	}
	require(n > 0 && n <= KZ_CURSOR_MAX_LEN, "encode succeeds within the length bound");
	require(strlen(buf) == n, "encoded length matches");
	require(kz_cursor_parse(buf, n, &back, &why) == KZ_CURSOR_OK,
			"an encoded token parses");
	require(same_cursor(&c, &back), "an encoded token parses to its fields");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_parse(data, size);
	fuzz_encode(data, size);
	return 0;
}
