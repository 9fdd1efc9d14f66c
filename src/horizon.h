/*-------------------------------------------------------------------------
 *
 * horizon.h
 *	  The visibility horizon of a pull: the high-water it may claim and the
 *	  seqs still in flight below it (holes).  Entries are classified by
 *	  their inserting (and deleting) transaction, read with SnapshotAny
 *	  through the bookkeeping indexes.  Implemented in src/horizon.c; the
 *	  argument is decisions/0010-sequencing.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_HORIZON_H
#define KZ_HORIZON_H

#include "utils/snapshot.h"

typedef struct KzHorizon
{
	int64		high_water;		/* the cursor's new high-water (or position) */
	int			nholes;			/* number of entries in holes[] */
	int64	   *holes;			/* ascending, distinct, each >= 1 and < high_water */
	bool		lowered;		/* high_water is below the position asked for */
} KzHorizon;

/*
 * A (table, bucket value) pair a pull asked for ('' for an unbucketed
 * table), by the number its entries carry (entry.h).
 */
typedef struct KzBucketPair
{
	int64		bucket;
} KzBucketPair;

/*
 * L: the highest seq present in the seq indexes of changelog and
 * tombstones (any tuple, read without a snapshot), and not above the
 * sequence's last value.  Every seq below L has all its entry's tuples in
 * the heap and in every index, and so does L once its inserting
 * transaction has committed (Invariant S, stamp.c); on a hot standby, in
 * what it has replayed.  Takes no lock.  *last_drawn (when not NULL) gets
 * the sequence's last value (0 before the first draw): at or above every
 * seq drawn (on a standby, every seq whose draw it replayed: the sequence
 * is logged ahead), for telling a cursor from the future.
 */
extern int64 kz_horizon_high_water(int64 *last_drawn);

/*
 * Of the incoming holes (any order, duplicates allowed), those still
 * pending in snap: ascending, distinct, palloc'd; returns the count.
 * Holes < 1 or >= below are ignored; a hole above L without any tuple is
 * kept (its entry may not be there yet).
 */
extern int	kz_horizon_recheck(const int64 *in_holes, int n_in_holes, int64 below,
							   int64 L, Snapshot snap, int64 **out);

/*
 * max(floor, highest seq in (floor, L] with an entry visible in snap), by a
 * backward scan of the seq indexes from L; when more than the scan budget
 * of non-visible tuples lie above it, a lower seq (just below the lowest
 * one examined).  Either way the caller classifies whatever it claims.
 */
extern int64 kz_horizon_highest_visible(int64 floor, int64 L, Snapshot snap);

/*
 * The cursor for a page whose position is pos (every candidate <= pos of
 * the requested pairs, pairs[0 .. npairs-1] ascending by number and each
 * once, has been read from snap; by_seq: the page read them by seq, with
 * few entries of other buckets among them): holes are the incoming
 * holes still pending (in_pending, ascending, all <= in_hw), the pending
 * seqs in (in_hw, pos] of the requested pairs, and the seqs in own (any
 * order, those above pos ignored): entries the page read as visible whose
 * row the pulling transaction has changed, which stay owed until it ends.
 * The high-water is pos, lowered below the first hole in (in_hw, pos]
 * under hole_floor (the reap horizon: a hole there would expire the
 * cursor), lowered while it is itself a hole, and lowered below the first hole that does not fit when
 * there are more than max_holes (never below in_hw).  out->lowered tells
 * the caller to drop the page's entries above out->high_water.  Nothing
 * above out->high_water is claimed, and everything at or below it is
 * classified.
 */
extern void kz_horizon_settle(int64 in_hw, int64 pos, const int64 *in_pending,
							  int n_in_pending, const int64 *own, int nown, int64 hole_floor,
							  const KzBucketPair *pairs, int npairs, bool by_seq,
							  Snapshot snap, int max_holes, KzHorizon *out);

/*
 * The reference form (test-only kizunasync_test.horizon()): classify every
 * entry of every table in (in_hw, L] and the incoming holes; max_holes as
 * above.
 */
extern PGDLLEXPORT void kz_horizon_compute(int64 in_hw, const int64 *in_holes,
										   int n_in_holes, Snapshot snap, int max_holes,
										   KzHorizon *out);

#endif							/* KZ_HORIZON_H */
