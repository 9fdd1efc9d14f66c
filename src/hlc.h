/*-------------------------------------------------------------------------
 *
 * hlc.h
 *	  Hybrid logical clock strings "<iso>|<counter>|<node>": split, compare,
 *	  clamp.  Plain C (no postgres.h), shared by push and the fuzz target.
 *
 *	  Comparison is the protocol's: the iso parts bytewise, then the counter
 *	  as an integer, then the node bytewise.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_HLC_H
#define KZ_HLC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct KzHlc
{
	const char *iso;			/* not NUL-terminated */
	size_t		iso_len;
	int64_t		counter;
	const char *node;			/* not NUL-terminated */
	size_t		node_len;
} KzHlc;

/*
 * Split s on '|' into iso, counter, node (missing parts are empty, a third
 * '|' and what follows belong to the node).  Returns false when the counter
 * is not empty and not a decimal that fits int64; *h is then unusable.
 */
extern bool kz_hlc_split(const char *s, KzHlc *h);

/* -1, 0, 1 */
extern int	kz_hlc_compare(const KzHlc *a, const KzHlc *b);

/*
 * Format epoch milliseconds as YYYY-MM-DDTHH:MM:SS.mmmZ (UTC) into buf
 * (at least 25 bytes).  Years outside 0000..9999 are clipped.
 */
extern void kz_hlc_format_iso(int64_t epoch_ms, char *buf);

/*
 * If h's iso part is bytewise greater than ceiling_iso, write the clamped
 * clock "<ceiling>|<counter>|<node>" to out (NUL-terminated, outsize bytes)
 * and return true; otherwise return false and leave out alone.
 */
extern bool kz_hlc_clamp(const KzHlc *h, const char *ceiling_iso, char *out, size_t outsize);

#endif							/* KZ_HLC_H */
