/*-------------------------------------------------------------------------
 *
 * pull_page.h
 *	  The pull response envelopes (SPEC 4.11), written straight into jsonb's
 *	  binary form with every rendered row embedded as it is.
 *	  Implemented in src/pull_page.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_PULL_PAGE_H
#define KZ_PULL_PAGE_H

#include "utils/jsonb.h"
#include "utils/timestamp.h"

/* A delivered row (row != NULL) or tombstone of a page. */
typedef struct KzPageEntry
{
	int64		seq;
	const char *table_name;
	const char *pk;
	Jsonb	   *row;
	TimestampTz deleted_at;
} KzPageEntry;

/*
 * {"rows", "cursor", "signal": null, "has_more", ["conflicts"], "tombstones"};
 * conflicts NULL omits the key.
 */
extern Jsonb *kz_page_build(const KzPageEntry *rows, int nrows,
							const KzPageEntry *tombs, int ntombs,
							const text *cursor, bool has_more, Jsonb *conflicts);

/* {"rows": [], "cursor": <as sent>, "signal": {"type": T}, "has_more": false, "tombstones": []} */
extern Jsonb *kz_page_signal(const char *type, const text *cursor);

#endif							/* KZ_PULL_PAGE_H */
