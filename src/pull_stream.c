/*-------------------------------------------------------------------------
 *
 * pull_stream.c
 *	  The candidate stream of a pull (pull_stream.h).
 *
 *	  Every bookkeeping read is a range scan of one pair's entries in seq
 *	  order bounded by LIMIT (entry.c, in a privileged section); rows are
 *	  rendered as the caller, one statement per table per batch.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "bucketlabel.h"
#include "entry_read.h"
#include "grants.h"
#include "pull_stream.h"
#include "render.h"
#include "rowprobe.h"
#include "spi.h"

static int
stream_cmp_candidate(const void *a, const void *b)
{
	const KzCandidate *x = a;
	const KzCandidate *y = b;
	int			c;

	if (x->seq != y->seq)
		return (x->seq > y->seq) - (x->seq < y->seq);
	c = strcmp(x->src->table->conf->table_name, y->src->table->conf->table_name);
	if (c != 0)
		return c;
	return strcmp(x->pk, y->pk);
}

static void
stream_add_source(KzPullStream *s, KzTableDesc *t, char *label, Jsonb *bj, bool granted)
{
	KzPullSource *src = &s->sources[s->nsources++];

	src->granted = granted;
	src->table = t;
	src->label = label;
	src->bucket = kz_entry_bucket(t->conf->id, label, false);
	src->bucket_json = bj;
	src->exhausted = false;
}

void
kz_stream_init(KzPullStream *s, const KzPullTables *pt, const char *sub,
			   int64 window_pos, int64 window_hi)
{
	int			i,
				j;

	memset(s, 0, sizeof(*s));
	s->window_pos = window_pos;
	s->window_hi = window_hi;
	s->sources = palloc0(sizeof(KzPullSource) * Max(pt->nscopes, 1));
	for (i = 0; i < pt->nscopes; i++)
	{
		KzScope    *sc = &pt->scopes[i];
		KzTableConf *c = sc->table->conf;
		char	   *label = NULL;
		Jsonb	   *bj = NULL;
		bool		dup = false;
		bool		granted;

		if (c->bucket_column == NULL)
			label = "";
		else
		{
			for (j = 0; j < sc->nparams; j++)
				if (strcmp(sc->params[j].name, c->bucket_column) == 0)
				{
					bj = sc->params[j].value;
					label = kz_label_of(bj, kz_tableconf_bucket_kind(c));
				}
			if (label == NULL)
				continue;		/* null bucket value: matches nothing */
		}
		for (j = 0; j < s->nsources && !dup; j++)
			dup = (s->sources[j].table == sc->table && strcmp(s->sources[j].label, label) == 0);
		if (dup)
			continue;
		granted = sub != NULL && kz_grants_held(sub, c->table_name, label);
		stream_add_source(s, sc->table, label, bj, granted);
	}
}

int
kz_stream_pairs(const KzPullStream *s, KzBucketPair **pairs)
{
	int			n = 0;
	int			i;

	*pairs = palloc(sizeof(KzBucketPair) * Max(s->nsources, 1));
	for (i = 0; i < s->nsources; i++)
		(*pairs)[n++].bucket = s->sources[i].bucket;
	return n;
}

/* The query of a source's entries: its rows, and its tombstones when granted. */
static void
stream_query(const KzPullSource *src, KzEntryQuery *q)
{
	const KzTableConf *c = src->table->conf;

	memset(q, 0, sizeof(*q));
	q->conf = c;
	q->bucket = src->bucket;
	q->tombs = src->granted;
	if (c->bucket_column != NULL)
	{
		/* a tombstone matches on the bucket column's value, also null against '' */
		q->snap_col = c->bucket_column;
		q->snap_val = src->bucket_json;
	}
}

/* Append entries rows[0 .. nrows-1] of src to cands[*n ..]. */
static void
stream_collect(const KzEntryRow *rows, int nrows, KzPullSource *src, KzCandidate *cands, int *n)
{
	int			r;

	for (r = 0; r < nrows; r++)
	{
		KzCandidate *c = &cands[*n];

		c->seq = rows[r].seq;
		c->pk = rows[r].pk;
		c->tomb = rows[r].tomb;
		c->deleted_at = rows[r].deleted_at;
		c->own = TransactionIdIsCurrentTransactionId(rows[r].xmin);
		c->own_key = false;
		c->src = src;
		c->row = NULL;
		(*n)++;
	}
}

/*
 * Drop from cands (sorted by seq) the second of two candidates of one seq:
 * two labels of a table whose numbers collide read each other's entries
 * (entry.c), and an entry is delivered once.
 */
static int
stream_unique(KzCandidate *cands, int n)
{
	int			i,
				j = 0;

	for (i = 0; i < n; i++)
		if (j == 0 || cands[j - 1].seq != cands[i].seq)
			cands[j++] = cands[i];
	return j;
}

void
kz_stream_add_holes(KzPullStream *s, const int64 *holes, int nholes)
{
	int			cap = nholes;
	int			i;

	s->nhole_cands = 0;
	s->hole_next = 0;
	if (nholes == 0 || s->nsources == 0)
		return;

	/* every hole is one seq: the sources give nholes rows, more only on a collision */
	s->hole_cands = palloc0(sizeof(KzCandidate) * cap);
	for (i = 0; i < s->nsources; i++)
	{
		KzPullSource *src = &s->sources[i];
		KzEntryQuery q;
		KzEntryRow *rows;
		int			got;

		stream_query(src, &q);
		q.seqs = holes;
		q.nseqs = nholes;
		got = kz_entry_select(&q, &rows);
		if (s->nhole_cands + got > cap)
		{
			cap = s->nhole_cands + got;
			s->hole_cands = repalloc(s->hole_cands, sizeof(KzCandidate) * cap);
		}
		stream_collect(rows, got, src, s->hole_cands, &s->nhole_cands);
	}
	qsort(s->hole_cands, s->nhole_cands, sizeof(KzCandidate), stream_cmp_candidate);
	s->nhole_cands = stream_unique(s->hole_cands, s->nhole_cands);
}

const KzPullSource *
kz_stream_ungranted_tombstones(const KzPullStream *s, int64 lo, int64 hi,
							   const int64 *holes, int nholes)
{
	int			i;

	for (i = 0; i < s->nsources; i++)
	{
		const KzPullSource *src = &s->sources[i];
		KzEntryQuery q;
		KzEntryRow *rows;

		if (src->granted)
			continue;
		/* the tombstones a grant would add */
		stream_query(src, &q);
		q.tombs = true;
		q.tombs_only = true;
		q.limit = 1;
		q.lo = lo;
		q.hi = hi;
		if (kz_entry_select(&q, &rows) > 0)
			return src;
		if (nholes > 0)
		{
			q.seqs = holes;
			q.nseqs = nholes;
			if (kz_entry_select(&q, &rows) > 0)
				return src;
		}
	}
	return NULL;
}

/*
 * Each source is asked for its first m entries past window_pos; the merged
 * list is a correct prefix of the stream up to the smallest last seq among
 * the sources that returned a full m (the others are exhausted).
 */
int
kz_stream_next(KzPullStream *s, KzCandidate *batch, int need)
{
	int			n = 0;
	int			m;
	KzCandidate *merged;
	int			nmerged = 0;
	int64		bound = PG_INT64_MAX;
	int64	   *short_last;
	int			i;

	while (n < need && s->hole_next < s->nhole_cands)
		batch[n++] = s->hole_cands[s->hole_next++];
	if (n == need)
		return n;

	m = need - n;
	merged = palloc(sizeof(KzCandidate) * (Size) m * Max(s->nsources, 1));
	short_last = palloc(sizeof(int64) * Max(s->nsources, 1));
	for (i = 0; i < s->nsources; i++)
	{
		KzPullSource *src = &s->sources[i];
		KzEntryQuery q;
		KzEntryRow *rows;
		int			got;

		short_last[i] = -1;
		if (src->exhausted)
			continue;
		stream_query(src, &q);
		q.lo = s->window_pos;
		q.hi = s->window_hi;
		q.limit = m;
		got = kz_entry_select(&q, &rows);
		stream_collect(rows, got, src, merged, &nmerged);
		/* a short source has nothing past its last row; -1: a full one */
		if ((int) got < m)
			short_last[i] = got > 0 ? merged[nmerged - 1].seq : 0;
		else if (merged[nmerged - 1].seq < bound)
			bound = merged[nmerged - 1].seq;
	}
	qsort(merged, nmerged, sizeof(KzCandidate), stream_cmp_candidate);
	nmerged = stream_unique(merged, nmerged);
	for (i = 0; i < nmerged && n < need && merged[i].seq <= bound; i++)
	{
		batch[n++] = merged[i];
		s->window_pos = merged[i].seq;
	}

	/*
	 * A short source is exhausted once every row it returned was taken; rows
	 * left over (the batch filled up first) are fetched again next time.
	 */
	for (i = 0; i < s->nsources; i++)
		if (!s->sources[i].exhausted && short_last[i] >= 0 && short_last[i] <= s->window_pos)
			s->sources[i].exhausted = true;
	pfree(merged);
	pfree(short_last);
	return n;
}

/*
 * The equalities a batch render of table t may add: when one bucket entry
 * of the request names t, its params.  kz_stream_in_scope keeps only rows
 * whose rendered value of each param equals the param's (jsonb equality),
 * so "col = value" may exclude no such row: only types whose jsonb equality
 * implies SQL equality qualify (integers, uuid, text, varchar, boolean; not
 * domains), and only readable columns.  The equality lets the planner fold
 * a policy "col = auth.uid()" into a one-time filter instead of evaluating
 * it per row (decisions/0025).  It offers the planner no access path the
 * policy did not: with an index on col, "col = auth.uid()" is already an
 * index condition.
 */
static KzRenderFilter *
stream_render_filter(const KzPullTables *pt, KzTableDesc *t)
{
	const KzScope *scope = NULL;
	KzRenderFilter *f;
	int			i;

	for (i = 0; i < pt->nscopes; i++)
	{
		if (pt->scopes[i].table != t)
			continue;
		if (scope != NULL)
			return NULL;		/* two entries: rows of either qualify */
		scope = &pt->scopes[i];
	}
	if (scope == NULL || scope->nparams == 0)
		return NULL;
	f = palloc(sizeof(KzRenderFilter));
	f->n = 0;
	f->cols = palloc(sizeof(KzColumn *) * scope->nparams);
	f->values = palloc(sizeof(Datum) * scope->nparams);
	for (i = 0; i < scope->nparams; i++)
	{
		const KzScopeParam *p = &scope->params[i];
		KzColumn   *col = kz_tabledesc_column(t, p->name);

		if (p->isnull || col == NULL || !col->can_select || col->typid != col->basetype)
			continue;
		switch (col->typid)
		{
			case INT2OID:
			case INT4OID:
			case INT8OID:
			case UUIDOID:
			case TEXTOID:
			case VARCHAROID:
			case BOOLOID:
				break;
			default:
				continue;
		}
		f->cols[f->n] = col;
		f->values[f->n++] = p->datum;
	}
	return f->n > 0 ? f : NULL;
}

void
kz_stream_mark_own_keys(const KzPullTables *pt, KzCandidate *batch, int n)
{
	char	  **pks;
	int		   *pos;
	bool	   *changed;
	int			ti,
				i;

	/* a transaction that wrote nothing has no xid */
	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return;
	pks = palloc(sizeof(char *) * Max(n, 1));
	pos = palloc(sizeof(int) * Max(n, 1));
	changed = palloc(sizeof(bool) * Max(n, 1));
	for (ti = 0; ti < pt->ntables; ti++)
	{
		KzTableDesc *t = pt->tables[ti];
		int			cnt = 0;

		for (i = 0; i < n; i++)
		{
			if (batch[i].src->table != t || batch[i].own)
				continue;		/* its entry is ours: a hole already */
			pks[cnt] = batch[i].pk;
			pos[cnt++] = i;
		}
		if (cnt == 0)
			continue;
		kz_rows_changed_in_xact(t->conf, pks, cnt, changed);
		for (i = 0; i < cnt; i++)
			batch[pos[i]].own_key = changed[i];
	}
	pfree(pks);
	pfree(pos);
	pfree(changed);
}

void
kz_stream_render(const KzPullTables *pt, KzCandidate *batch, int n)
{
	char	  **pks = palloc(sizeof(char *) * Max(n, 1));
	Jsonb	  **rows = palloc(sizeof(Jsonb *) * Max(n, 1));
	int		   *pos = palloc(sizeof(int) * Max(n, 1));
	int			ti,
				i;

	for (ti = 0; ti < pt->ntables; ti++)
	{
		KzTableDesc *t = pt->tables[ti];
		int			cnt = 0;

		for (i = 0; i < n; i++)
		{
			if (batch[i].src->table != t || batch[i].own || batch[i].own_key)
				continue;
			pks[cnt] = batch[i].pk;
			pos[cnt++] = i;
		}
		if (cnt == 0)
			continue;
		kz_render_batch(t, pks, cnt, rows, stream_render_filter(pt, t));
		for (i = 0; i < cnt; i++)
			batch[pos[i]].row = rows[i];
	}
	pfree(pks);
	pfree(rows);
	pfree(pos);
}

bool
kz_stream_in_scope(const KzPullTables *pt, const KzCandidate *c)
{
	int			i;

	if (c->row == NULL)
		return false;
	for (i = 0; i < pt->nscopes; i++)
		if (pt->scopes[i].table == c->src->table && kz_scope_matches(&pt->scopes[i], c->row))
			return true;
	return false;
}
