/*-------------------------------------------------------------------------
 *
 * pull_stream.h
 *	  The candidate stream of a pull: changelog entries and tombstones of
 *	  the requested (table, bucket value) pairs, in seq order, read from the
 *	  pull's snapshot in batches of what the page still needs.  First the
 *	  incoming holes that became visible, then the window (seq above the
 *	  incoming high-water, up to L).  Must be called inside SPI.
 *	  Implemented in src/pull_stream.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_PULL_STREAM_H
#define KZ_PULL_STREAM_H

#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "entry_window.h"
#include "horizon.h"
#include "pull_gates.h"

/*
 * A source of candidates: the entries of one (table, bucket value) pair,
 * its rows and, when the caller holds the pair's grant, its tombstones;
 * label is the bucket value text ('' for an unbucketed table), bucket its
 * number (entry.h).  Its window is read lazily, a few entries at a time
 * (buf), as many as the merge is likely to take from it.
 */
typedef struct KzPullSource
{
	KzTableDesc *table;
	char	   *label;
	int64		bucket;
	Jsonb	   *bucket_json;	/* the normalised bucket value (bucketed tables) */
	bool		granted;		/* the caller holds the pair's grant: tombstones too
								 * (known once an entry was read: pull_stream.c) */
	bool		grant_known;	/* granted is read */
	bool		exhausted;		/* nothing left in the window past buf */
	int		   *scopes;			/* the request's entries naming this pair */
	int			nscopes;
	KzEntryRow *buf;			/* read ahead, in seq order: buf[next .. nbuf-1] */
	int			nbuf;
	int			next;
	int			cap;
	int64		read_to;		/* the last seq read */
	int64		taken;			/* entries the merge took from it */
} KzPullSource;

typedef struct KzCandidate
{
	int64		seq;
	KzPullSource *src;
	char	   *pk;
	bool		tomb;			/* a tombstone, else a row entry */
	TimestampTz deleted_at;		/* tombstones only */
	bool		own;			/* written by the pulling transaction itself */
	bool		own_key;		/* its row was written by the pulling transaction */
	Jsonb	   *row;			/* rendered row, NULL when not visible */
} KzCandidate;

typedef struct KzPullStream
{
	int			nsources;
	KzPullSource *sources;
	const char *sub;			/* the caller's user id (NULL: none) */
	bool		grants_read;	/* every source's granted is known */
	int			grants_probed;	/* sources whose grant was read alone */
	int		   *by_bucket;		/* source indexes ordered by bucket number */
	int		   *null_scopes;	/* scopes naming a null bucket value (no source) */
	int			nnull_scopes;
	int64		window_pos;		/* the window: seq > window_pos ... */
	int64		window_hi;		/* ... and seq <= window_hi */
	Snapshot	snap;
	KzEntryWindow win;
	bool		win_open;
	int			mode;			/* STREAM_NEW, _RANGE, _MERGE (pull_merge.c) */
	int64		range_wasted;	/* entries the walk by seq read for no source */
	bool		merged;			/* the walk by seq gave way to the merge */
	int		   *heap;			/* sources with entries in buf: a min-heap by next seq */
	int			nheap;
	int64		last_seq;		/* the last window candidate handed out */
	int64		taken;			/* entries the merge took from the sources */
	KzCandidate *hole_cands;	/* incoming holes now visible, in seq order */
	int			nhole_cands;
	int			hole_next;
} KzPullStream;

/*
 * Sources for the scopes: one for each distinct (table, bucket value)
 * pair: its row entries and, when sub holds a grant for the pair, its
 * tombstones.  A null bucket value matches nothing; without sub there are
 * no grants and so no tombstones.  Entries are read from snap (NULL: the
 * stream only names its pairs) until kz_stream_end.
 */
extern void kz_stream_init(KzPullStream *s, const KzPullTables *pt, const char *sub,
						   Snapshot snap, int64 window_pos, int64 window_hi);

/*
 * Did the stream read its window by seq all along (it never gave way to
 * the merge)?  Then the entries of other buckets there were few.
 */
extern bool kz_stream_read_by_seq(const KzPullStream *s);

/* Close what the stream's reads opened (their memory stays). */
extern void kz_stream_end(KzPullStream *s);

/* The requested pairs' numbers, ascending, each once: for classifying holes (horizon.h). */
extern int	kz_stream_pairs(const KzPullStream *s, KzBucketPair **pairs);

/* The incoming holes that are no longer pending, to deliver ahead of the window. */
extern void kz_stream_add_holes(KzPullStream *s, const int64 *holes, int nholes);

/*
 * The first source whose pair the caller holds no grant for and that has a
 * tombstone visible in the snapshot, matching the bucket like the
 * tombstones a grant would add, with seq in (lo, hi] or among
 * holes[0 .. nholes-1]; NULL when there is none.  A standby cannot tell a
 * grant it has not replayed from none, so such a page is not answered
 * there (decisions/0085).
 */
extern const KzPullSource *kz_stream_ungranted_tombstones(KzPullStream *s, int64 lo,
														   int64 hi, const int64 *holes,
														   int nholes);

/* ------------------------------------------ for the window's reads (pull_merge.c) */

/* The entries of a source: its rows, and its tombstones when the caller holds its grant. */
extern void kz_stream_query(KzPullStream *s, KzPullSource *src, KzEntryQuery *q);

/* The stream's open entries (entry_window.h), opened at the first read. */
extern KzEntryWindow *kz_stream_window(KzPullStream *s);

/* The candidate for entry r of src. */
extern void kz_stream_candidate(const KzEntryRow *r, KzPullSource *src, KzCandidate *c);

/*
 * The first place in by_bucket of the sources numbered bucket, and how
 * many there are (*count; two labels of a table whose numbers collide
 * share one window: entry.c).
 */
extern int	kz_stream_find_bucket(const KzPullStream *s, int64 bucket, int *count);

/*
 * Mark the candidates whose row the pulling transaction has written (inserted,
 * updated or deleted, in any of its subtransactions still alive), whether or
 * not its change was numbered yet: what the pull's snapshot shows of such a
 * row may never commit, and what it hides may come back (decisions/0010,
 * "Corrections", item 3).  Costs nothing in a transaction without an xid.
 */
extern void kz_stream_mark_own_keys(const KzPullTables *pt, KzCandidate *batch, int n);

/*
 * Render the batch's rows as the current user (one statement per table),
 * except the candidates marked own or own_key.
 */
extern void kz_stream_render(const KzPullTables *pt, KzCandidate *batch, int n);

/*
 * Is the candidate's rendered row in one of the scopes of its table?  A
 * changelog candidate is delivered when it is; a tombstone candidate when
 * it is not (the row is gone from what the caller may see).  Only the
 * scopes whose bucket value has the row's label can match (bucketlabel.h),
 * so only those are tried.
 */
extern bool kz_stream_in_scope(const KzPullStream *s, const KzPullTables *pt,
							   const KzCandidate *c);

#endif							/* KZ_PULL_STREAM_H */
