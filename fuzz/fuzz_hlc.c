/*-------------------------------------------------------------------------
 *
 * fuzz_hlc.c
 *	  libFuzzer target for the hybrid logical clock helpers (src/hlc.c):
 *	  split, compare, clamp and the ISO formatter used for the skew ceiling.
 *
 * The input is cut at its first NUL byte (or in half when there is none)
 * into two clock strings a and b.  Properties checked:
 *
 * 1. kz_hlc_split never reads past the string; when it accepts, the parts
 *    lie inside the string, the counter is >= 0, and "iso|counter|node"
 *    re-splits to the same parts (counter without leading zeros);
 * 2. kz_hlc_compare is reflexive and antisymmetric, and transitive on
 *    (a, b, clamped a);
 * 3. kz_hlc_clamp (ceiling = b's iso part) clamps exactly when a's iso is
 *    bytewise greater, the result splits back to the ceiling, a's counter
 *    and a's node, and compares below a;
 * 4. kz_hlc_format_iso of any 64-bit value (the first 8 bytes) writes a
 *    24-byte YYYY-MM-DDTHH:MM:SS.mmmZ string.
 *
 * Any broken property aborts, which libFuzzer records as a crash.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlc.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
require(int cond, const char *what)
{
	if (!cond)
	{
		fprintf(stderr, "fuzz_hlc: property violated: %s\n", what);
		abort();
	}
}

static int
same_parts(const KzHlc *x, const KzHlc *y)
{
	return x->iso_len == y->iso_len && memcmp(x->iso, y->iso, x->iso_len) == 0 &&
		x->counter == y->counter &&
		x->node_len == y->node_len && memcmp(x->node, y->node, x->node_len) == 0;
}

static void
check_split(const char *s, const KzHlc *h)
{
	size_t		len = strlen(s);
	size_t		buflen;
	char	   *buf;
	KzHlc		again;

	require(h->counter >= 0, "counter >= 0");
	require(h->iso == s && h->iso_len <= len, "iso inside the string");
	require(h->node_len == 0 || (h->node >= s && h->node + h->node_len == s + len),
			"node is the tail of the string");
	if (strchr(s, '|') == NULL)
		return;
	/* rebuild "iso|counter|node" and split it again */
	buflen = h->iso_len + h->node_len + 32;
	buf = malloc(buflen);
	require(buf != NULL, "malloc");
	snprintf(buf, buflen, "%.*s|%lld|%.*s", (int) h->iso_len, h->iso,
			 (long long) h->counter, (int) h->node_len, h->node);
	require(kz_hlc_split(buf, &again), "a rebuilt clock splits");
	require(same_parts(h, &again), "a rebuilt clock has the same parts");
	require(kz_hlc_compare(h, &again) == 0, "a rebuilt clock compares equal");
	free(buf);
}

static void
check_format(const uint8_t *data, size_t size)
{
	int64_t		ms = 0;
	char		buf[64];
	int			i;

	memcpy(&ms, data, size < sizeof(ms) ? size : sizeof(ms));
	memset(buf, 'x', sizeof(buf));
	kz_hlc_format_iso(ms, buf);
	require(strlen(buf) == 24, "iso is 24 bytes");
	for (i = 0; i < 24; i++)
	{
		char		c = buf[i];

		switch (i)
		{
			case 4:
			case 7:
				require(c == '-', "iso date separators");
				break;
			case 10:
				require(c == 'T', "iso T");
				break;
			case 13:
			case 16:
				require(c == ':', "iso time separators");
				break;
			case 19:
				require(c == '.', "iso dot");
				break;
			case 23:
				require(c == 'Z', "iso Z");
				break;
			default:
				require(c >= '0' && c <= '9', "iso digits");
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *a;
	char	   *b;
	const uint8_t *nul = memchr(data, 0, size);
	size_t		alen = nul ? (size_t) (nul - data) : size / 2;
	size_t		bstart = nul ? alen + 1 : alen;
	KzHlc		ha,
				hb;
	bool		oka,
				okb;

	check_format(data, size);

	a = malloc(alen + 1);
	b = malloc(size - bstart + 1);
	require(a != NULL && b != NULL, "malloc");
	memcpy(a, data, alen);
	a[alen] = '\0';
	memcpy(b, data + bstart, size - bstart);
	b[size - bstart] = '\0';

	oka = kz_hlc_split(a, &ha);
	okb = kz_hlc_split(b, &hb);
	if (oka)
		check_split(a, &ha);
	if (okb)
		check_split(b, &hb);

	if (oka && okb)
	{
		int			ab = kz_hlc_compare(&ha, &hb);
		int			ba = kz_hlc_compare(&hb, &ha);
		char	   *ceiling;
		char	   *out;
		size_t		outsize;

		require(kz_hlc_compare(&ha, &ha) == 0, "compare is reflexive");
		require(ab >= -1 && ab <= 1, "compare returns -1, 0 or 1");
		require(ab == -ba, "compare is antisymmetric");

		/* clamp a to b's iso part */
		ceiling = malloc(hb.iso_len + 1);
		require(ceiling != NULL, "malloc");
		memcpy(ceiling, hb.iso, hb.iso_len);
		ceiling[hb.iso_len] = '\0';
		outsize = hb.iso_len + ha.node_len + 32;
		out = malloc(outsize);
		require(out != NULL, "malloc");
		if (kz_hlc_clamp(&ha, ceiling, out, outsize))
		{
			KzHlc		hc;
			KzHlc		want = ha;

			require(strlen(ceiling) == hb.iso_len, "no NUL inside the ceiling");
			require(kz_hlc_split(out, &hc), "a clamped clock splits");
			want.iso = ceiling;
			want.iso_len = hb.iso_len;
			require(same_parts(&hc, &want), "clamp keeps counter and node");
			require(kz_hlc_compare(&hc, &ha) < 0, "a clamped clock is older");
			/* transitivity: clamped < a, and b's iso <= clamped's iso */
			if (kz_hlc_compare(&ha, &hb) < 0)
				require(kz_hlc_compare(&hc, &hb) < 0, "compare is transitive");
		}
		else
		{
			size_t		n = ha.iso_len < hb.iso_len ? ha.iso_len : hb.iso_len;
			int			r = memcmp(ha.iso, ceiling, n);

			require(r < 0 || (r == 0 && ha.iso_len <= hb.iso_len),
					"no clamp only when a's iso is not bytewise greater");
		}
		free(out);
		free(ceiling);
	}
	free(a);
	free(b);
	return 0;
}
