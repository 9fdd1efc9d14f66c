/*-------------------------------------------------------------------------
 *
 * hlc.c
 *	  Hybrid logical clock strings (see hlc.h).  Plain C.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hlc.h"

bool
kz_hlc_split(const char *s, KzHlc *h)
{
	const char *p1 = strchr(s, '|');
	const char *c;
	const char *cend;
	int64_t		v = 0;

	memset(h, 0, sizeof(*h));
	h->iso = s;
	h->node = "";
	if (p1 == NULL)
	{
		h->iso_len = strlen(s);
		return true;
	}
	h->iso_len = (size_t) (p1 - s);
	c = p1 + 1;
	cend = strchr(c, '|');
	if (cend == NULL)
		cend = c + strlen(c);
	else
	{
		h->node = cend + 1;
		h->node_len = strlen(cend + 1);
	}
	for (; c < cend; c++)
	{
		if (*c < '0' || *c > '9')
			return false;
		if (v > (INT64_MAX - (*c - '0')) / 10)
			return false;
		v = v * 10 + (*c - '0');
	}
	h->counter = v;
	return true;
}

static int
bytecmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int			r = memcmp(a, b, alen < blen ? alen : blen);

	if (r != 0)
		return r < 0 ? -1 : 1;
	if (alen != blen)
		return alen < blen ? -1 : 1;
	return 0;
}

int
kz_hlc_compare(const KzHlc *a, const KzHlc *b)
{
	int			r = bytecmp(a->iso, a->iso_len, b->iso, b->iso_len);

	if (r != 0)
		return r;
	if (a->counter != b->counter)
		return a->counter < b->counter ? -1 : 1;
	return bytecmp(a->node, a->node_len, b->node, b->node_len);
}

void
kz_hlc_format_iso(int64_t epoch_ms, char *buf)
{
	/* 0000-01-01 and 9999-12-31T23:59:59.999 in epoch ms */
	const int64_t lo = -62167219200000LL;
	const int64_t hi = 253402300799999LL;
	time_t		secs;
	int			ms;
	struct tm	tm;

	if (epoch_ms < lo)
		epoch_ms = lo;
	if (epoch_ms > hi)
		epoch_ms = hi;
	secs = (time_t) (epoch_ms >= 0 ? epoch_ms / 1000 : -((-epoch_ms + 999) / 1000));
	ms = (int) (epoch_ms - (int64_t) secs * 1000);
	gmtime_r(&secs, &tm);
	snprintf(buf, 25, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			 tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

bool
kz_hlc_clamp(const KzHlc *h, const char *ceiling_iso, char *out, size_t outsize)
{
	if (bytecmp(h->iso, h->iso_len, ceiling_iso, strlen(ceiling_iso)) <= 0)
		return false;
	snprintf(out, outsize, "%s|%lld|%.*s", ceiling_iso, (long long) h->counter,
			 (int) h->node_len, h->node);
	return true;
}
