/*-------------------------------------------------------------------------
 *
 * sequencing.h
 *	  Commit-safe sequencing: the global change sequence, the fence that
 *	  makes "draw a seq + record its entry" atomic with respect to a pull's
 *	  reading of the high-water, hole detection for pulls, and the queue that
 *	  lets push number a mutation's changes only once it decides to keep them.
 *
 *	  Implemented in src/sequencing.c and src/capture.c.  The argument for
 *	  correctness is in decisions/ (sequencing record).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_SEQUENCING_H
#define KZ_SEQUENCING_H

#include "postgres.h"
#include "utils/snapshot.h"

/* ---------------------------------------------------------------- pull side */

typedef struct KzHorizon
{
	int64		high_water;		/* the pull's new high-water */
	int			nholes;			/* number of entries in holes[] */
	int64	   *holes;			/* ascending, distinct, each >= 1 and < high_water */
} KzHorizon;

/*
 * kz_horizon_compute
 *
 * For a pull whose incoming cursor has high-water in_hw and holes
 * in_holes[0 .. n_in_holes-1], running with snapshot snap (the one snapshot
 * the whole pull uses), compute the new high-water and the seqs that are
 * still in flight.
 *
 * Postcondition: every seq s <= out->high_water whose change has committed
 * or may still commit is exactly one of
 *	 (a) visible in snap (the pull delivers it if s > in_hw or s is in in_holes),
 *	 (b) listed in out->holes (in flight, or committed after snap was taken),
 *	 (c) <= in_hw, not in in_holes (delivered by an earlier pull).
 * Holes of in_holes whose transaction aborted are dropped.  At most
 * max_holes holes are returned: when more seqs are in flight, high_water is
 * lowered to just below the first one that does not fit, so nothing is ever
 * skipped.  out->high_water >= in_hw always.
 *
 * The new high-water is the highest seq in (in_hw, L] whose change is visible
 * in snap (L: the sequence's high-water read under the fence), as the
 * corpus's oracle computes it; in-flight seqs above it are not claimed yet.
 * out->holes is palloc'd in the current memory context.  May be called as any
 * role (it reads bookkeeping directly).  The argument is in
 * decisions/0010-sequencing.md.
 */
extern void kz_horizon_compute(int64 in_hw, const int64 *in_holes, int n_in_holes,
							   Snapshot snap, int max_holes, KzHorizon *out);

/*
 * The page-bounded horizon of a pull (decisions/0010, "Pull, page-bounded").
 * kz_horizon_compute above classifies every entry of (in_hw, L] of every
 * table; a pull instead uses these pieces, so its cost follows the page and
 * the requested buckets:
 *
 * kz_seq_fenced_high_water: L, the sequence's high-water read under the
 *	 fence (every seq <= L has its entry tuple in the heap and the indexes).
 * kz_holes_recheck: of the incoming holes (any order, duplicates allowed),
 *	 those still pending in snap; ascending, distinct, palloc'd; returns the
 *	 count.  Holes < 1 or >= below are ignored.
 * kz_highest_visible: max(floor, highest seq in (floor, L] with an entry
 *	 visible in snap), found by scanning the seq indexes backwards from L;
 *	 when more than 100 000 non-visible tuples lie above it, a lower bound
 *	 (just below the lowest seq examined) instead.
 * kz_bucket_holes: the pending seqs in [lo, hi] among the entries (changelog
 *	 and tombstones) of the given (table, bucket value) pairs, found through
 *	 the (table_name, bucket_value, seq) indexes; ascending, distinct,
 *	 palloc'd; returns the count.
 */
typedef struct KzBucketPair
{
	const char *table_name;
	const char *bucket_value;	/* '' for an unbucketed table */
} KzBucketPair;

extern int64 kz_seq_fenced_high_water(void);
extern int	kz_holes_recheck(const int64 *in_holes, int n_in_holes, int64 below,
							 Snapshot snap, int64 **out);
extern int64 kz_highest_visible(int64 floor, int64 L, Snapshot snap);
extern int	kz_bucket_holes(const KzBucketPair *pairs, int npairs, int64 lo, int64 hi,
							Snapshot snap, int64 **out);

/* ---------------------------------------------------------------- push side */

/*
 * While queuing is on, the capture triggers do not number changes: they
 * queue them (in capture order, in TopTransactionContext).  Push turns
 * queuing on around a mutation (or a whole atomic batch), then either
 * flushes (numbers and records every queued change, in order, inside the
 * fence) or discards (the mutation was rejected, or the batch aborted and
 * its subtransaction was rolled back).  A rejected mutation or an aborted
 * batch therefore draws no seq.  Transaction abort clears the queue.
 */
extern void kz_capture_queue_begin(void);
extern void kz_capture_queue_flush(void);
extern void kz_capture_queue_discard(void);
extern void kz_capture_queue_end(void);	/* ERROR if changes are left unflushed */

/*
 * Op of the newest change still queued for (table_name, pk) in this
 * transaction: 'u' (upsert), 'd' (delete) or '\0' (none queued).
 */
extern char kz_capture_queued_op(const char *table_name, const char *pk);

#endif							/* KZ_SEQUENCING_H */
