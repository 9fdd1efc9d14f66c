/*-------------------------------------------------------------------------
 *
 * horizon.c
 *	  The visibility horizon of a pull (horizon.h).
 *
 * An entry tuple is classified by the transactions that inserted and
 * deleted it, against the pull's snapshot:
 *	 VISIBLE  its inserter committed before the snapshot (or it is frozen),
 *			  and the pull's own transaction has not deleted it;
 *	 PENDING  its inserter is running or prepared, committed after the
 *			  snapshot, or is the pull's own transaction; or the pull's own
 *			  transaction deleted it (so its fate is that transaction's);
 *	 DEAD	  its inserter aborted or crashed.
 * A seq with several tuple versions takes PENDING over VISIBLE over DEAD.
 * PENDING seqs a cursor passes are its holes.  Own-transaction entries are
 * holes because the pull cannot know whether they will commit: a pull in a
 * transaction that then rolls back must not have delivered them, nor moved
 * a cursor past an entry it deleted (decisions/0010, "Own transaction").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "commands/sequence.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "bookkeeping.h"
#include "entry.h"
#include "horizon.h"
#include "identity.h"

/*
 * Upper bound on index tuples a backward high-water scan visits.  Past it
 * the scan answers below what it examined; kz_horizon_settle then
 * classifies whatever is claimed, so the bound costs only a lower cursor.
 */
#define KZ_HORIZON_SCAN_BUDGET	100000

typedef enum KzEntryState
{
	KZ_ENTRY_DEAD,
	KZ_ENTRY_VISIBLE,
	KZ_ENTRY_PENDING
} KzEntryState;

static KzEntryState
horizon_xmin_state(TransactionId xmin, Snapshot snap)
{
	if (!TransactionIdIsNormal(xmin))
		return KZ_ENTRY_VISIBLE;	/* frozen or bootstrap */
	if (TransactionIdIsCurrentTransactionId(xmin))
		return KZ_ENTRY_PENDING;	/* ours: commits or aborts with us */
	if (XidInMVCCSnapshot(xmin, snap))
	{
		/* not visible to snap; in progress first: a running xid has no clog state */
		if (TransactionIdIsInProgress(xmin))
			return KZ_ENTRY_PENDING;
		if (TransactionIdDidCommit(xmin))
			return KZ_ENTRY_PENDING;	/* committed after snap: next pull */
		return KZ_ENTRY_DEAD;
	}
	return TransactionIdDidCommit(xmin) ? KZ_ENTRY_VISIBLE : KZ_ENTRY_DEAD;
}

static KzEntryState
horizon_tuple_state(HeapTupleHeader htup, Snapshot snap)
{
	KzEntryState st = horizon_xmin_state(HeapTupleHeaderGetXmin(htup), snap);

	/* an entry our own transaction deleted may come back if we roll back */
	if (st == KZ_ENTRY_VISIBLE &&
		!(htup->t_infomask & HEAP_XMAX_INVALID) &&
		!HEAP_XMAX_IS_LOCKED_ONLY(htup->t_infomask) &&
		TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetUpdateXid(htup)))
		return KZ_ENTRY_PENDING;
	return st;
}

typedef struct KzSeqList
{
	int64	   *v;
	int			n;
	int			cap;
} KzSeqList;

static void
seqlist_add(KzSeqList *l, int64 s)
{
	if (l->n > 0 && l->v[l->n - 1] == s)
		return;
	if (l->n == l->cap)
	{
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = l->v ? repalloc(l->v, sizeof(int64) * l->cap) : palloc(sizeof(int64) * l->cap);
	}
	l->v[l->n++] = s;
}

static int
horizon_cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

static void
seqlist_sort_unique(KzSeqList *l)
{
	int			i,
				j = 0;

	if (l->n < 2)
		return;
	qsort(l->v, l->n, sizeof(int64), horizon_cmp_int64);
	for (i = 0; i < l->n; i++)
		if (j == 0 || l->v[j - 1] != l->v[i])
			l->v[j++] = l->v[i];
	l->n = j;
}

/*
 * Walks the entries' seq index in one direction with SnapshotAny, one seq
 * at a time (all its tuple versions together).
 */
typedef struct SeqWalk
{
	KzEntryScan es;
	Snapshot	snap;
	bool		have_next;		/* a tuple of the next seq is at hand */
	int64		next_seq;
	HeapTupleHeader next_htup;
	int			seen;			/* index tuples visited */
} SeqWalk;

static void
seqwalk_begin(SeqWalk *w, int64 lo, int64 hi, ScanDirection dir, Snapshot snap)
{
	w->snap = snap;
	w->seen = 0;
	kz_entry_scan_seqs(&w->es, lo, hi, dir);
	w->have_next = lo <= hi && kz_entry_scan_next(&w->es, &w->next_seq, &w->next_htup);
	if (w->have_next)
		w->seen++;
}

/* The next seq and its state; false at the end of the range. */
static bool
seqwalk_next(SeqWalk *w, int64 *seq, KzEntryState *state)
{
	KzEntryState st = KZ_ENTRY_DEAD;

	if (!w->have_next)
		return false;
	*seq = w->next_seq;
	for (;;)
	{
		int64		s;

		if (st != KZ_ENTRY_PENDING)
		{
			KzEntryState t = horizon_tuple_state(w->next_htup, w->snap);

			if (t > st)
				st = t;
		}
		CHECK_FOR_INTERRUPTS();
		if (!kz_entry_scan_next(&w->es, &s, &w->next_htup))
		{
			w->have_next = false;
			break;
		}
		w->seen++;
		if (s != *seq)
		{
			w->next_seq = s;
			break;
		}
	}
	*state = st;
	return true;
}

static void
seqwalk_end(SeqWalk *w)
{
	kz_entry_scan_end(&w->es);
}

/* The state of seq s (classified through the seq index). */
static KzEntryState
horizon_seq_state(int64 s, Snapshot snap, bool *found)
{
	SeqWalk		w;
	int64		seq;
	KzEntryState st = KZ_ENTRY_DEAD;

	seqwalk_begin(&w, s, s, ForwardScanDirection, snap);
	*found = seqwalk_next(&w, &seq, &st);
	seqwalk_end(&w);
	return st;
}

/* ---------------------------------------------------------------- L */

/* The sequence's last value, 0 before the first draw. */
static int64
horizon_last_drawn(void)
{
	Oid			seqid = kz_bk_relid("change_seq");
	LOCAL_FCINFO(fcinfo, 1);
	Datum		result;
	KzUserSwitch s;

	/* pg_sequence_last_value checks privileges: read it as the owner */
	kz_as_restricted_begin(&s, kz_extension_owner(), false);
	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = ObjectIdGetDatum(seqid);
	fcinfo->args[0].isnull = false;
	result = pg_sequence_last_value(fcinfo);
	kz_as_restricted_end(&s);
	return fcinfo->isnull ? 0 : DatumGetInt64(result);
}

int64
kz_horizon_high_water(int64 *last_drawn)
{
	int64		drawn = horizon_last_drawn();
	int64		top = kz_entry_max_seq();

	/*
	 * Invariant S (stamp.c): a seq is drawn only inside the writers'
	 * section, which ends after the inserts of its entry's heap tuple and
	 * of the index entries a pull reads; so every seq below one found here
	 * was drawn by a section that has ended.
	 * No lock is needed, on a primary or on a standby.  Entries above the
	 * sequence (only a sequence set back by hand leaves them) are ignored,
	 * as they always were.
	 */
	if (last_drawn)
		*last_drawn = drawn;
	return Min(top, drawn);
}

/* ---------------------------------------------------------------- holes */

int
kz_horizon_recheck(const int64 *in_holes, int n_in_holes, int64 below, int64 L,
				   Snapshot snap, int64 **out)
{
	KzSeqList	holes = {NULL, 0, 0};
	int64	   *sorted;
	int			i;

	*out = NULL;
	if (n_in_holes <= 0)
		return 0;
	sorted = palloc(sizeof(int64) * n_in_holes);
	memcpy(sorted, in_holes, sizeof(int64) * n_in_holes);
	qsort(sorted, n_in_holes, sizeof(int64), horizon_cmp_int64);
	for (i = 0; i < n_in_holes; i++)
	{
		int64		h = sorted[i];
		bool		found;

		if (h < 1 || h >= below || (i > 0 && sorted[i - 1] == h))
			continue;
		if (horizon_seq_state(h, snap, &found) == KZ_ENTRY_PENDING)
			seqlist_add(&holes, h);
		else if (!found && h > L)
		{
			/*
			 * No tuple, and above every seq this pull can prove inserted
			 * (Invariant S): a standby that has not replayed the entry yet,
			 * or an entry vacuumed away above the last one left.  Keep
			 * owing it; once the seq indexes pass it, a missing tuple means
			 * a removed one (aborted or superseded) and the hole is dropped.
			 */
			seqlist_add(&holes, h);
		}
	}
	pfree(sorted);
	*out = holes.v;
	return holes.n;
}

/*
 * Highest seq in (floor, L] whose entry is VISIBLE, or floor; scanning
 * backwards from L.  Past the budget, answers just below the lowest seq
 * examined (nothing in [that, L] is visible).
 */
int64
kz_horizon_highest_visible(int64 floor, int64 L, Snapshot snap)
{
	SeqWalk		w;
	int64		seq;
	KzEntryState st;
	int64		result = floor;

	if (L <= floor)
		return floor;
	seqwalk_begin(&w, floor + 1, L, BackwardScanDirection, snap);
	while (seqwalk_next(&w, &seq, &st))
	{
		if (st == KZ_ENTRY_VISIBLE)
		{
			result = seq;
			break;
		}
		if (w.seen >= KZ_HORIZON_SCAN_BUDGET && w.have_next)
		{
			result = Max(floor, seq - 1);
			break;
		}
	}
	seqwalk_end(&w);
	return result;
}

/*
 * Add to holes the pending seqs in [lo, hi] among the entries of one
 * (table, bucket value) pair, ascending, through the pair index with
 * SnapshotAny (es, positioned on the pair's range); stop after limit of
 * them.  A seq any of whose tuple versions is pending is a hole, so
 * versions need no grouping here.
 */
static void
horizon_scan_pair(KzEntryScan *es, Snapshot snap, int limit, KzSeqList *holes)
{
	int64		s;
	HeapTupleHeader htup;
	int			found = 0;

	while (found < limit && kz_entry_scan_next(es, &s, &htup))
	{
		if (horizon_tuple_state(htup, snap) == KZ_ENTRY_PENDING)
		{
			if (holes->n == 0 || holes->v[holes->n - 1] != s)
				found++;
			seqlist_add(holes, s);
		}
		CHECK_FOR_INTERRUPTS();
	}
}

/* Is bucket among pairs[0 .. npairs-1] (ascending by number)? */
static bool
horizon_has_bucket(const KzBucketPair *pairs, int npairs, int64 bucket)
{
	int			lo = 0,
				hi = npairs;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (pairs[mid].bucket < bucket)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < npairs && pairs[lo].bucket == bucket;
}

/*
 * The tuples of other buckets the walk by seq reads before it gives way to
 * a scan per pair: twice the pairs and a few more (a pair's scan costs a
 * descent).
 */
#define HORIZON_RANGE_SLACK	2

/*
 * The first limit pending seqs in [lo, hi] of the pairs (ascending by
 * number, each once: kz_stream_pairs), ascending.  When by_seq (the page
 * read the range by seq and found few entries of other buckets: a
 * bootstrap or delta of many buckets), first by seq through the seq index,
 * every tuple of the range, keeping those of the pairs: what the page read
 * and little else.  Once it has read more tuples of other buckets than a
 * scan per pair would cost, or from the start when not by_seq, the range
 * is read pair by pair: one scan, rescanned for each pair, a pair costing
 * one descent and its entries in the range.
 */
static void
horizon_pair_holes(const KzBucketPair *pairs, int npairs, bool by_seq, int64 lo, int64 hi,
				   Snapshot snap, int limit, KzSeqList *holes)
{
	KzEntryScan es;
	int64		s;
	int64		prev;
	int64		last_hole;
	HeapTupleHeader htup;
	int64		wasted = 0;
	int			found = 0;
	bool		more;
	int			i;

	if (lo < 1)
		lo = 1;
	if (npairs <= 0 || lo > hi)
		return;
	s = lo;
	more = !by_seq;
	if (by_seq)
	{
		/* by seq; a seq's versions are adjacent, so it gives way between seqs */
		kz_entry_scan_seqs(&es, lo, hi, ForwardScanDirection);
		prev = last_hole = lo - 1;
		while (found < limit && kz_entry_scan_next(&es, &s, &htup))
		{
			if (s != prev && wasted > 2 * (int64) npairs + HORIZON_RANGE_SLACK)
			{
				more = true;
				break;
			}
			prev = s;
			if (!horizon_has_bucket(pairs, npairs, kz_entry_scan_bucket_of(&es)))
				wasted++;
			else if (s != last_hole && horizon_tuple_state(htup, snap) == KZ_ENTRY_PENDING)
			{
				seqlist_add(holes, s);
				last_hole = s;
				found++;
			}
			CHECK_FOR_INTERRUPTS();
		}
		kz_entry_scan_end(&es);
	}

	/* the rest, [s, hi], pair by pair */
	if (more)
	{
		for (i = 0; i < npairs; i++)
		{
			if (i == 0)
				kz_entry_scan_bucket(&es, pairs[i].bucket, s, hi);
			else
				kz_entry_scan_bucket_again(&es, pairs[i].bucket, s, hi);
			horizon_scan_pair(&es, snap, limit - found, holes);
		}
		kz_entry_scan_end(&es);
	}
	seqlist_sort_unique(holes);
	if (holes->n > limit)
		holes->n = limit;
}

/* The largest s < x with s > floor that is not in holes[0 .. n-1]; floor if none. */
static int64
horizon_below_run(int64 x, int64 floor, const int64 *holes, int n)
{
	int64		s = x - 1;
	int			i = n - 1;

	while (i >= 0 && holes[i] > s)
		i--;
	while (s > floor && i >= 0 && holes[i] == s)
	{
		s--;
		i--;
	}
	return Max(s, floor);
}

void
kz_horizon_settle(int64 in_hw, int64 pos, const int64 *in_pending, int n_in_pending,
				  const int64 *own, int nown, int64 hole_floor,
				  const KzBucketPair *pairs, int npairs, bool by_seq, Snapshot snap,
				  int max_holes, KzHorizon *out)
{
	KzSeqList	all = {NULL, 0, 0};
	int			n_in = n_in_pending;
	int			i;
	int64		hw = pos;

	/* pending seqs in (in_hw, pos] of the requested pairs: the first that can matter */
	horizon_pair_holes(pairs, npairs, by_seq, in_hw + 1, pos, snap, max_holes + 1, &all);

	/*
	 * With the incoming holes still pending (all <= in_hw) and the seqs of
	 * keys the pulling transaction changed (own: the caller read their
	 * entries as visible, but they are holes all the same).
	 */
	for (i = 0; i < n_in_pending; i++)
		seqlist_add(&all, in_pending[i]);
	for (i = 0; i < nown; i++)
	{
		if (own[i] < 1 || own[i] > pos)
			continue;
		if (own[i] <= in_hw)
			n_in++;				/* an incoming hole it keeps */
		seqlist_add(&all, own[i]);
	}
	seqlist_sort_unique(&all);
	if (max_holes < n_in)
		max_holes = n_in;		/* a cursor never had more than it may have */

	/*
	 * No new hole below hole_floor (the reap horizon: only a bootstrap reads
	 * there), where it would expire the cursor: the page ends below the
	 * first one.
	 */
	for (i = 0; i < all.n && all.v[i] <= in_hw; i++)
		;
	if (i < all.n && all.v[i] < hole_floor)
		hw = Min(hw, horizon_below_run(all.v[i], in_hw, all.v, all.n));

	/* the high-water itself must not be pending: walk below a run ending at it */
	for (i = all.n; i > 0 && all.v[i - 1] > hw; i--)
		;
	if (hw > in_hw && i > 0 && all.v[i - 1] == hw)
		hw = horizon_below_run(hw + 1, in_hw, all.v, all.n);

	/* too many holes below it: end just below the first that does not fit */
	for (i = 0; i < all.n && all.v[i] < hw; i++)
		;
	if (i > max_holes)
		hw = horizon_below_run(all.v[max_holes], in_hw, all.v, all.n);
	for (i = 0; i < all.n && all.v[i] < hw; i++)
		;

	out->high_water = hw;
	out->nholes = i;
	out->holes = i > 0 ? all.v : NULL;
	out->lowered = hw < pos;
}

/* ------------------------------------------------------------ reference */

/*
 * Classify every seq in [lo, hi]: pending ones go to holes, and
 * *max_visible rises to the highest visible one.
 */
static void
horizon_scan_range(int64 lo, int64 hi, Snapshot snap, KzSeqList *holes, int64 *max_visible)
{
	SeqWalk		w;
	int64		seq;
	KzEntryState st;

	seqwalk_begin(&w, lo, hi, ForwardScanDirection, snap);
	while (seqwalk_next(&w, &seq, &st))
	{
		if (st == KZ_ENTRY_PENDING)
			seqlist_add(holes, seq);
		else if (st == KZ_ENTRY_VISIBLE && seq > *max_visible)
			*max_visible = seq;
	}
	seqwalk_end(&w);
}

void
kz_horizon_compute(int64 in_hw, const int64 *in_holes, int n_in_holes,
				   Snapshot snap, int max_holes, KzHorizon *out)
{
	int64		L;
	int64		hw;
	int64	   *pending;
	int			npending;
	KzSeqList	holes = {NULL, 0, 0};
	int			i;

	if (in_hw < 0)
		in_hw = 0;
	L = kz_horizon_high_water(NULL);
	npending = kz_horizon_recheck(in_holes, n_in_holes, in_hw, L, snap, &pending);
	for (i = 0; i < npending; i++)
		seqlist_add(&holes, pending[i]);

	hw = in_hw;
	if (L > in_hw)
	{
		KzSeqList	fresh = {NULL, 0, 0};
		int64		max_visible = in_hw;

		horizon_scan_range(in_hw + 1, L, snap, &fresh, &max_visible);
		hw = max_visible;
		for (i = 0; i < fresh.n; i++)
			if (fresh.v[i] < hw)
				seqlist_add(&holes, fresh.v[i]);
	}
	seqlist_sort_unique(&holes);

	if (max_holes < 0)
		max_holes = 0;
	if (holes.n > max_holes)
	{
		hw = horizon_below_run(holes.v[max_holes], in_hw, holes.v, holes.n);
		for (i = 0; i < holes.n && holes.v[i] < hw; i++)
			;
		holes.n = i;
	}
	out->high_water = hw;
	out->nholes = holes.n;
	out->holes = holes.n > 0 ? holes.v : NULL;
	out->lowered = false;
}
