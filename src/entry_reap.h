/*-------------------------------------------------------------------------
 *
 * entry_reap.h
 *	  The reap's walks over the tombstones in seq order: a call costs what
 *	  it removes plus a probe per walk (decisions/0003).  With entry.c and
 *	  entry_read.c, the code that knows the entries' layout (decisions/
 *	  0092).  Implemented in src/entry_reap.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_ENTRY_REAP_H
#define KZ_ENTRY_REAP_H

#include "utils/timestamp.h"

/* The TTL of each synced table, sorted by its id (synced_tables.id). */
typedef struct KzReapTtl
{
	int32		tid;
	int32		ttl_days;
	TimestampTz cutoff;			/* now() - ttl_days: older tombstones are due */
} KzReapTtl;

typedef struct KzReapTtls
{
	KzReapTtl  *tables;
	int			ntables;
	int32		default_days;	/* tables not synced any more, and tables without their own */
	TimestampTz default_cutoff;
} KzReapTtls;

/* Work done and allowed by one call, over all of its walks. */
typedef struct KzReapBudget
{
	int64		max_rows;		/* tombstones one call may remove */
	int64		max_passed;		/* tombstones one call may pass without removing */
	int64		reaped;
	int64		passed;
	int64		max_seq;		/* highest seq removed (0: none) */
} KzReapBudget;

/*
 * The floor walk (ttl_days 0; cutoff unused): from from_seq in seq order,
 * removes each tombstone that is due under its own table's TTL, and stops
 * at the first one it cannot remove now (not due, or held by another
 * transaction: being deleted or locked, or inserted by one still running).
 * Every tombstone below the position it returns is gone.
 *
 * The walk of TTL d > 0 (cutoff: now() - d days): from from_seq in seq
 * order, removes the due tombstones of tables whose TTL is at most d days,
 * passes over those of tables with a longer TTL and those another
 * transaction holds, and stops after a run of tombstones not older than
 * cutoff (the first of them keeps its position).  The position it returns
 * is never above a tombstone of those tables that it did not remove.
 *
 * Either stops early when the budget runs out.  Returns the position (seq)
 * the walk goes on from.  Never waits for another transaction.
 */
extern int64 kz_reap_walk(int32 ttl_days, TimestampTz cutoff, int64 from_seq,
						  const KzReapTtls *ttls, KzReapBudget *budget);

#endif							/* KZ_ENTRY_REAP_H */
