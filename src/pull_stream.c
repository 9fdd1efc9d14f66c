/*-------------------------------------------------------------------------
 *
 * pull_stream.c
 *	  The candidate stream of a pull (pull_stream.h).
 *
 *	  The sources of the named pairs, their grants, the incoming holes; the
 *	  window is read by pull_merge.c (entry_window.c); rows are rendered
 *	  as the caller, one statement per table per batch.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "bucketlabel.h"
#include "entry.h"
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

/* ------------------------------------------------------------ the sources */

/* A scope's pair, before duplicates are merged. */
typedef struct StreamPair
{
	int			scope;
	KzTableDesc *table;
	char	   *label;
	Jsonb	   *bucket_json;
	int64		bucket;
} StreamPair;

static int
stream_cmp_pair(const void *a, const void *b)
{
	const StreamPair *x = a;
	const StreamPair *y = b;
	int			c;

	if (x->bucket != y->bucket)
		return (x->bucket > y->bucket) - (x->bucket < y->bucket);
	if (x->table != y->table)
	{
		c = strcmp(x->table->conf->table_name, y->table->conf->table_name);
		if (c != 0)
			return c;
	}
	c = strcmp(x->label, y->label);
	if (c != 0)
		return c;
	return (x->scope > y->scope) - (x->scope < y->scope);
}

/* Each scope's (table, bucket value) pair; a null bucket value has none. */
static int
stream_scope_pairs(KzPullStream *s, const KzPullTables *pt, StreamPair *pairs)
{
	int			n = 0;
	int			i,
				j;

	for (i = 0; i < pt->nscopes; i++)
	{
		KzScope    *sc = &pt->scopes[i];
		KzTableConf *c = sc->table->conf;
		char	   *label = NULL;
		Jsonb	   *bj = NULL;

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
			{
				/* null bucket value: matches nothing, reads nothing */
				s->null_scopes[s->nnull_scopes++] = i;
				continue;
			}
		}
		pairs[n].scope = i;
		pairs[n].table = sc->table;
		pairs[n].label = label;
		pairs[n].bucket_json = bj;
		pairs[n].bucket = kz_entry_bucket(c->id, label, false);
		n++;
	}
	return n;
}

void
kz_stream_init(KzPullStream *s, const KzPullTables *pt, const char *sub, Snapshot snap,
			   int64 window_pos, int64 window_hi)
{
	int			nscopes = Max(pt->nscopes, 1);
	StreamPair *pairs = palloc(sizeof(StreamPair) * nscopes);
	int		   *pair_at = palloc(sizeof(int) * nscopes);	/* scope -> its place in pairs */
	int		   *run_start = palloc(sizeof(int) * nscopes);	/* place -> its run's first place */
	int		   *run_end = palloc(sizeof(int) * nscopes);	/* run's first place -> past its last */
	int		   *src_at = palloc(sizeof(int) * nscopes);	/* run's first place -> its source */
	int			npairs;
	int			i,
				n;

	memset(s, 0, sizeof(*s));
	s->window_pos = window_pos;
	s->window_hi = window_hi;
	s->snap = snap;
	s->sources = palloc0(sizeof(KzPullSource) * nscopes);
	s->null_scopes = palloc(sizeof(int) * nscopes);

	/*
	 * One source per distinct pair, in the order of the request's first
	 * entry naming it, with the entries naming it in request order: found
	 * by sorting (a run of equal pairs, ordered by entry), so that a
	 * thousand entries cost K log K in time and K in memory, not K^2.
	 */
	npairs = stream_scope_pairs(s, pt, pairs);
	qsort(pairs, npairs, sizeof(StreamPair), stream_cmp_pair);
	for (i = 0; i < pt->nscopes; i++)
		pair_at[i] = -1;
	for (i = 0; i < npairs; i++)
	{
		bool		same = i > 0 && pairs[i - 1].bucket == pairs[i].bucket &&
			pairs[i - 1].table == pairs[i].table &&
			strcmp(pairs[i - 1].label, pairs[i].label) == 0;

		pair_at[pairs[i].scope] = i;
		run_start[i] = same ? run_start[i - 1] : i;
		run_end[run_start[i]] = i + 1;
	}
	for (i = 0; i < pt->nscopes; i++)
	{
		int			p = pair_at[i];
		int			r;
		int			k;
		KzPullSource *src;

		if (p < 0 || run_start[p] != p)
			continue;			/* no pair, or not the first entry naming it */
		r = run_end[p];
		src_at[p] = s->nsources;
		src = &s->sources[s->nsources++];
		src->table = pairs[p].table;
		src->label = pairs[p].label;
		src->bucket = pairs[p].bucket;
		src->bucket_json = pairs[p].bucket_json;
		src->scopes = palloc(sizeof(int) * (r - p));
		for (k = p; k < r; k++)
			src->scopes[src->nscopes++] = pairs[k].scope;
	}

	/*
	 * The sources by bucket number, then request order: the pairs' order
	 * (by number first), each run of one number put in request order.
	 */
	s->by_bucket = palloc(sizeof(int) * Max(s->nsources, 1));
	for (i = 0, n = 0; i < npairs; i++)
	{
		int			v,
					j;

		if (run_start[i] != i)
			continue;
		v = src_at[i];
		for (j = n++; j > 0 && s->sources[s->by_bucket[j - 1]].bucket == s->sources[v].bucket &&
			 s->by_bucket[j - 1] > v; j--)
			s->by_bucket[j] = s->by_bucket[j - 1];
		s->by_bucket[j] = v;
	}

	s->sub = sub;
	pfree(pairs);
	pfree(pair_at);
	pfree(run_start);
	pfree(run_end);
	pfree(src_at);
}

bool
kz_stream_read_by_seq(const KzPullStream *s)
{
	return !s->merged;
}

void
kz_stream_end(KzPullStream *s)
{
	if (s->win_open)
		kz_entry_window_end(&s->win);
	s->win_open = false;
}

int
kz_stream_pairs(const KzPullStream *s, KzBucketPair **pairs)
{
	int			n = 0;
	int			i;

	/* ascending by number, each once (two colliding labels share one) */
	*pairs = palloc(sizeof(KzBucketPair) * Max(s->nsources, 1));
	for (i = 0; i < s->nsources; i++)
	{
		int64		b = s->sources[s->by_bucket[i]].bucket;

		if (n == 0 || (*pairs)[n - 1].bucket != b)
			(*pairs)[n++].bucket = b;
	}
	return n;
}

/*
 * The grants of the sources' pairs whose entries a page reads: one probe of
 * the grants' primary key each for the first STREAM_GRANT_PROBES of them,
 * then one statement for all the others.  A delta or an empty pull naming
 * a thousand buckets reads the grants of the few pairs that changed, not
 * the caller's thousand (decisions/0025, item 7); an idle pull asks none.
 * Every read sees the pull's snapshot.
 */
#define STREAM_GRANT_PROBES 16

static void
stream_grants(KzPullStream *s)
{
	const char **tables;
	const char **labels;
	bool	   *held;
	int		   *at;
	int			n = 0;
	int			i;

	if (s->grants_read)
		return;
	s->grants_read = true;
	if (s->sub == NULL || s->nsources == 0)
		return;
	tables = palloc(sizeof(char *) * s->nsources);
	labels = palloc(sizeof(char *) * s->nsources);
	held = palloc(sizeof(bool) * s->nsources);
	at = palloc(sizeof(int) * s->nsources);
	for (i = 0; i < s->nsources; i++)
	{
		if (s->sources[i].grant_known)
			continue;
		tables[n] = s->sources[i].table->conf->table_name;
		labels[n] = s->sources[i].label;
		at[n++] = i;
	}
	kz_grants_held_many(s->sub, tables, labels, n, held);
	for (i = 0; i < n; i++)
	{
		s->sources[at[i]].granted = held[i];
		s->sources[at[i]].grant_known = true;
	}
	pfree(tables);
	pfree(labels);
	pfree(held);
	pfree(at);
}

static void
stream_grant(KzPullStream *s, KzPullSource *src)
{
	if (src->grant_known || s->grants_read)
		return;
	if (s->sub == NULL)
		src->granted = false;
	else if (s->grants_probed < STREAM_GRANT_PROBES)
	{
		s->grants_probed++;
		src->granted = kz_grants_held(s->sub, src->table->conf->table_name, src->label);
	}
	else
	{
		stream_grants(s);
		return;
	}
	src->grant_known = true;
}

/* The entries of a source: its rows, and its tombstones when granted. */
void
kz_stream_query(KzPullStream *s, KzPullSource *src, KzEntryQuery *q)
{
	const KzTableConf *c = src->table->conf;

	stream_grant(s, src);
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

KzEntryWindow *
kz_stream_window(KzPullStream *s)
{
	if (!s->win_open)
	{
		Assert(s->snap != NULL);
		kz_entry_window_begin(&s->win, s->snap);
		s->win_open = true;
	}
	return &s->win;
}

void
kz_stream_candidate(const KzEntryRow *r, KzPullSource *src, KzCandidate *c)
{
	c->seq = r->seq;
	c->pk = r->pk;
	c->tomb = r->tomb;
	c->deleted_at = r->deleted_at;
	c->own = TransactionIdIsCurrentTransactionId(r->xmin);
	c->own_key = false;
	c->src = src;
	c->row = NULL;
}

/*
 * The first of the sources numbered bucket in s->by_bucket, and how many
 * there are (two labels of a table whose numbers collide share a window:
 * entry.c).
 */
int
kz_stream_find_bucket(const KzPullStream *s, int64 bucket, int *count)
{
	int			lo = 0,
				hi = s->nsources;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (s->sources[s->by_bucket[mid]].bucket < bucket)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (*count = 0; lo + *count < s->nsources &&
		 s->sources[s->by_bucket[lo + *count]].bucket == bucket; (*count)++)
		;
	return lo;
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

	/* every hole is one seq, found through the seq index, and its pair's sources */
	s->hole_cands = palloc0(sizeof(KzCandidate) * cap);
	for (i = 0; i < nholes; i++)
	{
		KzEntryWindow *w = kz_stream_window(s);
		int64		bucket;
		int			first,
					count,
					k;

		if (!kz_entry_window_seq(w, holes[i], &bucket))
			continue;
		first = kz_stream_find_bucket(s, bucket, &count);
		for (k = first; k < first + count; k++)
		{
			KzPullSource *src = &s->sources[s->by_bucket[k]];
			KzEntryQuery q;
			KzEntryRow row;

			kz_stream_query(s, src, &q);
			if (!kz_entry_window_match(w, &q, &row))
				continue;
			if (s->nhole_cands == cap)
			{
				cap *= 2;
				s->hole_cands = repalloc(s->hole_cands, sizeof(KzCandidate) * cap);
			}
			kz_stream_candidate(&row, src, &s->hole_cands[s->nhole_cands++]);
		}
	}
	qsort(s->hole_cands, s->nhole_cands, sizeof(KzCandidate), stream_cmp_candidate);
	s->nhole_cands = stream_unique(s->hole_cands, s->nhole_cands);
}

const KzPullSource *
kz_stream_ungranted_tombstones(KzPullStream *s, int64 lo, int64 hi,
							   const int64 *holes, int nholes)
{
	bool	   *in_holes = palloc0(sizeof(bool) * Max(s->nsources, 1));
	int			i;

	stream_grants(s);

	/* the tombstones a grant would add, among the holes ... */
	for (i = 0; i < nholes; i++)
	{
		KzEntryWindow *w = kz_stream_window(s);
		int64		bucket;
		int			first,
					count,
					k;

		if (!kz_entry_window_seq(w, holes[i], &bucket))
			continue;
		first = kz_stream_find_bucket(s, bucket, &count);
		for (k = first; k < first + count; k++)
		{
			KzPullSource *src = &s->sources[s->by_bucket[k]];
			KzEntryQuery q;
			KzEntryRow row;

			if (src->granted)
				continue;
			kz_stream_query(s, src, &q);
			q.tombs = q.tombs_only = true;
			if (kz_entry_window_match(w, &q, &row))
				in_holes[s->by_bucket[k]] = true;
		}
	}
	/* ... and in (lo, hi]; the first source in request order */
	for (i = 0; i < s->nsources; i++)
	{
		KzPullSource *src = &s->sources[i];
		KzEntryQuery q;
		KzEntryRow row;

		if (src->granted)
			continue;
		kz_stream_query(s, src, &q);
		q.tombs = q.tombs_only = true;
		if (in_holes[i] || kz_entry_window_read(kz_stream_window(s), &q, lo, hi, 1, &row) > 0)
			return src;
	}
	return NULL;
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

/* Does the row match one of the scopes idx[0 .. n-1]? */
static bool
stream_scopes_match(const KzPullTables *pt, const int *idx, int n, KzTableDesc *t, Jsonb *row)
{
	int			i;

	for (i = 0; i < n; i++)
		if (pt->scopes[idx[i]].table == t && kz_scope_matches(&pt->scopes[idx[i]], row))
			return true;
	return false;
}

bool
kz_stream_in_scope(const KzPullStream *s, const KzPullTables *pt, const KzCandidate *c)
{
	KzTableDesc *t = c->src->table;
	const KzTableConf *conf = t->conf;
	JsonbValue	k;
	JsonbValue *v;
	char	   *label;
	int			first,
				count,
				i;

	if (c->row == NULL)
		return false;
	/* where its entry says it is: the common case */
	if (stream_scopes_match(pt, c->src->scopes, c->src->nscopes, t, c->row))
		return true;
	/* every scope of an unbucketed table names its one pair */
	if (conf->bucket_column == NULL)
		return false;

	/*
	 * Every scope of a bucketed table names its bucket column (KZL01), and
	 * a row matches one only when its value there has the scope's label:
	 * the scopes of the pair its value now names, or the null ones.
	 */
	k.type = jbvString;
	k.val.string.val = conf->bucket_column;
	k.val.string.len = strlen(conf->bucket_column);
	v = findJsonbValueFromContainer(&c->row->root, JB_FOBJECT, &k);
	if (v == NULL)
		return false;
	if (v->type == jbvNull)
		return stream_scopes_match(pt, s->null_scopes, s->nnull_scopes, t, c->row);
	label = kz_label_of(JsonbValueToJsonb(v), kz_tableconf_bucket_kind(conf));
	if (label == NULL)
		return false;
	first = kz_stream_find_bucket(s, kz_entry_bucket_number(conf->id, label), &count);
	for (i = first; i < first + count; i++)
	{
		const KzPullSource *src = &s->sources[s->by_bucket[i]];

		if (src != c->src && src->table == t &&
			stream_scopes_match(pt, src->scopes, src->nscopes, t, c->row))
			return true;
	}
	return false;
}
