/*-------------------------------------------------------------------------
 *
 * entry_window.h
 *	  A pull's reads of the entries (decisions/0092, 0025): a requested
 *	  bucket's window in seq order, a batch at a time, through the pair
 *	  index (bucket, seq), and single entries by seq through the seq index
 *	  (the incoming holes), both with the pull's snapshot.  No statement is
 *	  run: one index scan per index, rescanned for each read, so a read
 *	  costs one index descent and the entries it returns.  With entry.c,
 *	  entry_read.c and entry_key.c, the only code that knows the entries'
 *	  layout.  Implemented in src/entry_window.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_ENTRY_WINDOW_H
#define KZ_ENTRY_WINDOW_H

#include "access/attnum.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "tableconf.h"

/* One entry as a pull reads it. */
typedef struct KzEntryRow
{
	int64		seq;
	char	   *pk;
	bool		tomb;
	TimestampTz deleted_at;		/* tombstones */
	TransactionId xmin;			/* of the entry's tuple */
} KzEntryRow;

/*
 * Which entries of one bucket a pull reads: rows of table conf, and
 * tombstones when tombs (only tombstones with tombs_only).  For a bucketed
 * table a tombstone must also carry the requested value in its snapshot
 * (snap_col, snap_val: snapshot -> snap_col = snap_val under jsonb
 * equality).
 */
typedef struct KzEntryQuery
{
	const KzTableConf *conf;
	int64		bucket;
	bool		tombs;
	bool		tombs_only;
	const char *snap_col;		/* NULL: no snapshot condition */
	Jsonb	   *snap_val;
} KzEntryQuery;

/* The entries opened for a pull's reads. */
typedef struct KzEntryWindow
{
	Relation	heap;
	Relation	pair_index;
	Relation	seq_index;		/* opened at the first read by seq */
	struct IndexScanDescData *pair_scan;
	struct IndexScanDescData *seq_scan;
	struct IndexScanDescData *range_scan;
	struct TupleTableSlot *slot;
	Snapshot	snap;
	bool		have;			/* slot holds the entry kz_entry_window_seq found */
	AttrNumber	a_seq,
				a_bucket,
				a_tid,
				a_key,
				a_kind,
				a_deleted_at,
				a_snapshot;
} KzEntryWindow;

/* Open the entries for reads with snap (which the caller keeps registered). */
extern void kz_entry_window_begin(KzEntryWindow *w, Snapshot snap);
extern void kz_entry_window_end(KzEntryWindow *w);

/*
 * The first (at most) max entries q asks for with seq in (after, hi],
 * ascending, into out[] (keys palloc'd in the caller's context); returns
 * how many.  Fewer than max: there are no more in the range.
 */
extern int	kz_entry_window_read(KzEntryWindow *w, const KzEntryQuery *q, int64 after,
								 int64 hi, int max, KzEntryRow *out);

/*
 * The entry with this seq that the snapshot sees: false when there is
 * none; else its bucket number, and it stays at hand for
 * kz_entry_window_match until the next read.
 */
extern bool kz_entry_window_seq(KzEntryWindow *w, int64 seq, int64 *bucket);

/*
 * The entries the snapshot sees with seq in (after, hi], ascending by seq
 * through the seq index, whatever their bucket: kz_entry_window_range
 * starts the walk, each kz_entry_window_range_next gives the next one's
 * seq and bucket number (false at the end) and keeps it at hand for
 * kz_entry_window_match, as kz_entry_window_seq does.
 */
extern void kz_entry_window_range(KzEntryWindow *w, int64 after, int64 hi);
extern bool kz_entry_window_range_next(KzEntryWindow *w, int64 *seq, int64 *bucket);

/*
 * Is the entry kz_entry_window_seq or kz_entry_window_range_next found one
 * that q asks for?  Then *out.
 */
extern bool kz_entry_window_match(KzEntryWindow *w, const KzEntryQuery *q, KzEntryRow *out);

#endif							/* KZ_ENTRY_WINDOW_H */
