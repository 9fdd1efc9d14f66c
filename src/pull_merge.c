/*-------------------------------------------------------------------------
 *
 * pull_merge.c
 *	  Reading the window of a pull's candidate stream (pull_merge.h).
 *
 *	  A pull may name a thousand buckets (decisions/0022) and a page must
 *	  cost what it delivers plus a small constant per bucket (decisions/0025,
 *	  item 7).  The window is first read by seq through the seq index, each
 *	  entry handed to the first source of its bucket number that asks for
 *	  it: what a delta or an empty pull over many buckets reads is what lies
 *	  in its window.  Once that has read more entries of other buckets than
 *	  twice the sources, a K-way merge takes over: each source's window read
 *	  through the pair index a few entries at a time as the merge reaches
 *	  it, a min-heap by next seq choosing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "entry_window.h"
#include "pull_merge.h"

/* Does source a come before source b in the merge (next seq, then order)? */
static inline bool
stream_before(const KzPullStream *s, int a, int b)
{
	int64		x = s->sources[a].buf[s->sources[a].next].seq;
	int64		y = s->sources[b].buf[s->sources[b].next].seq;

	return x < y || (x == y && a < b);
}

static void
stream_sift_down(KzPullStream *s, int i)
{
	for (;;)
	{
		int			l = 2 * i + 1;
		int			m = i;
		int			t;

		if (l < s->nheap && stream_before(s, s->heap[l], s->heap[m]))
			m = l;
		if (l + 1 < s->nheap && stream_before(s, s->heap[l + 1], s->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

/*
 * Read the next ask entries of the source's window into buf (the entries
 * read before are handed out or passed).  A read that returns fewer than
 * it asked for reached the end of the window.
 */
static void
stream_fill(KzPullStream *s, KzPullSource *src, int ask)
{
	KzEntryQuery q;

	ask = Max(ask, 1);
	if (ask > src->cap)
	{
		src->cap = ask;
		src->buf = src->buf ? repalloc(src->buf, sizeof(KzEntryRow) * ask)
			: palloc(sizeof(KzEntryRow) * ask);
	}
	kz_stream_query(s, src, &q);
	src->nbuf = kz_entry_window_read(kz_stream_window(s), &q, src->read_to, s->window_hi, ask,
									 src->buf);
	src->next = 0;
	src->exhausted = src->nbuf < ask;
	if (src->nbuf > 0)
		src->read_to = src->buf[src->nbuf - 1].seq;
}

/*
 * How many entries a drained source reads next, when the merge still
 * needs want candidates: its share of them, estimated from its share of
 * what the merge handed out so far, with a quarter more and one more, so
 * that what a page reads and does not hand out stays about one entry per
 * source whether its sources interleave or one of them holds the page.
 */
static int
stream_ask(const KzPullStream *s, const KzPullSource *src, int want)
{
	double		share = s->taken > 0 ? (double) src->taken / (double) s->taken : 1.0;
	double		ask = want * share * 1.25 + 1;

	return (int) Max(1, Min(ask, (double) Max(want, 1)));
}

/* How the window is read (KzPullStream.mode). */
#define STREAM_NEW		0		/* not yet */
#define STREAM_RANGE	1		/* by seq, through the seq index */
#define STREAM_MERGE	2		/* a merge of the sources' windows */

/*
 * The entries read by seq for no source that make the walk give way to
 * the merge: twice the sources and a few more (a merge costs each source
 * a descent and a read ahead).
 */
#define STREAM_RANGE_SLACK	2

/*
 * Start the merge after seq from: the first read of every source, an
 * equal share of the need candidates still wanted, at least one entry.
 */
static void
stream_merge_start(KzPullStream *s, int64 from, int need)
{
	int			share = Max(need / Max(s->nsources, 1), 1);
	int			i;

	s->mode = STREAM_MERGE;
	s->merged = true;
	s->heap = palloc(sizeof(int) * Max(s->nsources, 1));
	s->nheap = 0;
	s->last_seq = from;
	if (from >= s->window_hi)
		return;					/* nothing left to read */
	for (i = 0; i < s->nsources; i++)
	{
		KzPullSource *src = &s->sources[i];

		src->read_to = from;
		stream_fill(s, src, share);
		if (src->nbuf > 0)
			s->heap[s->nheap++] = i;
	}
	for (i = s->nheap / 2 - 1; i >= 0; i--)
		stream_sift_down(s, i);
}

/*
 * The window by seq: every entry the snapshot sees past the last one read,
 * handed to the first source (in request order) of its bucket number that
 * asks for it.  Appends to batch[n ..] up to need; returns the new n.  At
 * the end of the window the stream ends; once it has read more entries for
 * no source than the merge would cost, the merge takes over after the last
 * entry read.
 */
static int
stream_range(KzPullStream *s, KzCandidate *batch, int n, int need)
{
	KzEntryWindow *w = kz_stream_window(s);

	while (n < need)
	{
		int64		seq;
		int64		bucket;
		int			first,
					count,
					k;
		bool		taken = false;

		if (s->range_wasted > 2 * (int64) s->nsources + STREAM_RANGE_SLACK)
		{
			stream_merge_start(s, s->last_seq, need - n);
			return n;
		}
		if (!kz_entry_window_range_next(w, &seq, &bucket))
		{
			s->mode = STREAM_MERGE;		/* with no source left: the end */
			return n;
		}
		s->last_seq = seq;
		first = kz_stream_find_bucket(s, bucket, &count);
		for (k = first; k < first + count && !taken; k++)
		{
			KzPullSource *src = &s->sources[s->by_bucket[k]];
			KzEntryQuery q;
			KzEntryRow row;

			kz_stream_query(s, src, &q);
			if (kz_entry_window_match(w, &q, &row))
			{
				kz_stream_candidate(&row, src, &batch[n++]);
				src->taken++;
				s->taken++;
				taken = true;
			}
		}
		if (!taken)
			s->range_wasted++;
	}
	return n;
}

int
kz_stream_next(KzPullStream *s, KzCandidate *batch, int need)
{
	int			n = 0;

	while (n < need && s->hole_next < s->nhole_cands)
		batch[n++] = s->hole_cands[s->hole_next++];
	if (n == need)
		return n;
	if (s->mode == STREAM_NEW)
	{
		s->last_seq = s->window_pos;
		if (s->window_pos >= s->window_hi || s->nsources == 0)
			s->mode = STREAM_MERGE;		/* an empty window: nothing to read */
		else
		{
			s->mode = STREAM_RANGE;
			kz_entry_window_range(kz_stream_window(s), s->window_pos, s->window_hi);
		}
	}
	if (s->mode == STREAM_RANGE)
		n = stream_range(s, batch, n, need);
	while (n < need && s->nheap > 0)
	{
		KzPullSource *src = &s->sources[s->heap[0]];
		KzEntryRow *r = &src->buf[src->next++];

		/* a seq two colliding sources both read is handed out once */
		if (r->seq != s->last_seq)
		{
			kz_stream_candidate(r, src, &batch[n++]);
			s->last_seq = r->seq;
		}
		src->taken++;
		s->taken++;
		if (src->next == src->nbuf && !src->exhausted)
			stream_fill(s, src, stream_ask(s, src, need - n));
		if (src->next < src->nbuf)
			stream_sift_down(s, 0);
		else
		{
			s->heap[0] = s->heap[--s->nheap];
			stream_sift_down(s, 0);
		}
	}
	return n;
}
