/*-------------------------------------------------------------------------
 *
 * pull_stream.c
 *	  The candidate stream of a pull (pull_stream.h).
 *
 *	  Every bookkeeping read is an index range scan on (table_name,
 *	  bucket_value, seq) bounded by LIMIT, run in a privileged section; rows
 *	  are rendered as the caller, one statement per table per batch.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "bucketlabel.h"
#include "grants.h"
#include "pull_stream.h"
#include "render.h"
#include "rowprobe.h"
#include "spi.h"

#define STREAM_WINDOW_COLS \
	"seq, pk, %s, xmin FROM kizunasync.%s" \
	" WHERE table_name OPERATOR(pg_catalog.=) $1 AND bucket_value OPERATOR(pg_catalog.=) $2"

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
stream_add_source(KzPullStream *s, KzTableDesc *t, char *label, Jsonb *bj, bool tombstones,
				  bool granted)
{
	KzPullSource *src = &s->sources[s->nsources++];

	src->granted = granted;
	src->table = t;
	src->label = label;
	src->bucket_json = bj;
	src->tombstones = tombstones;
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
	s->sources = palloc0(sizeof(KzPullSource) * Max(pt->nscopes * 2, 1));
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
		stream_add_source(s, sc->table, label, bj, false, granted);
		if (granted)
			stream_add_source(s, sc->table, label, bj, true, true);
	}
}

int
kz_stream_pairs(const KzPullStream *s, KzBucketPair **pairs)
{
	int			n = 0;
	int			i;

	*pairs = palloc(sizeof(KzBucketPair) * Max(s->nsources, 1));
	for (i = 0; i < s->nsources; i++)
	{
		if (s->sources[i].tombstones)
			continue;			/* each pair has exactly one changelog source */
		(*pairs)[n].table_name = s->sources[i].table->conf->table_name;
		(*pairs)[n].bucket_value = s->sources[i].label;
		n++;
	}
	return n;
}

static bool
stream_snapshot_filter(const KzPullSource *src)
{
	return src->tombstones && src->table->conf->bucket_column != NULL;
}

/* Append the rows of the last SPI result to cands[*n ..]; returns rows added. */
static int
stream_collect(uint64 nrows, KzPullSource *src, KzCandidate *cands, int *n)
{
	SPITupleTable *tt = SPI_tuptable;
	uint64		r;

	for (r = 0; r < nrows; r++)
	{
		HeapTuple	tup = tt->vals[r];
		bool		isnull;
		KzCandidate *c = &cands[*n];

		c->seq = DatumGetInt64(SPI_getbinval(tup, tt->tupdesc, 1, &isnull));
		c->pk = TextDatumGetCString(SPI_getbinval(tup, tt->tupdesc, 2, &isnull));
		c->deleted_at = 0;
		if (src->tombstones)
			c->deleted_at = DatumGetTimestampTz(SPI_getbinval(tup, tt->tupdesc, 3, &isnull));
		c->own = TransactionIdIsCurrentTransactionId(
			DatumGetTransactionId(SPI_getbinval(tup, tt->tupdesc, 4, &isnull)));
		c->own_key = false;
		c->src = src;
		c->row = NULL;
		(*n)++;
	}
	SPI_freetuptable(tt);
	return (int) nrows;
}

static char *
stream_select(const KzPullSource *src, const char *tail)
{
	return psprintf("SELECT " STREAM_WINDOW_COLS "%s%s",
					src->tombstones ? "deleted_at" : "NULL::pg_catalog.timestamptz",
					src->tombstones ? "tombstones" : "changelog",
					stream_snapshot_filter(src)
					? " AND (bucket_snapshot OPERATOR(pg_catalog.->) $3)"
					" OPERATOR(pg_catalog.=) $4" : "",
					tail);
}

void
kz_stream_add_holes(KzPullStream *s, const int64 *holes, int nholes)
{
	Datum	   *elems;
	ArrayType  *arr;
	int			i;

	s->nhole_cands = 0;
	s->hole_next = 0;
	if (nholes == 0 || s->nsources == 0)
		return;
	elems = palloc(sizeof(Datum) * nholes);
	for (i = 0; i < nholes; i++)
		elems[i] = Int64GetDatum(holes[i]);
	arr = construct_array(elems, nholes, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);

	/* every hole is one seq, so the sources together give at most nholes rows */
	s->hole_cands = palloc0(sizeof(KzCandidate) * nholes);
	for (i = 0; i < s->nsources; i++)
	{
		KzPullSource *src = &s->sources[i];
		Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, JSONBOID, INT8ARRAYOID};
		Datum		vals[5];
		uint64		got;
		bool		filter = stream_snapshot_filter(src);

		vals[0] = CStringGetTextDatum(src->table->conf->table_name);
		vals[1] = CStringGetTextDatum(src->label);
		if (filter)
		{
			vals[2] = CStringGetTextDatum(src->table->conf->bucket_column);
			vals[3] = JsonbPGetDatum(src->bucket_json);
			vals[4] = PointerGetDatum(arr);
			got = kz_spi_priv(stream_select(src, " AND seq OPERATOR(pg_catalog.=) ANY ($5) ORDER BY seq"),
							  5, types, vals, NULL, true, 0, SPI_OK_SELECT);
		}
		else
		{
			types[2] = INT8ARRAYOID;
			vals[2] = PointerGetDatum(arr);
			got = kz_spi_priv(stream_select(src, " AND seq OPERATOR(pg_catalog.=) ANY ($3) ORDER BY seq"),
							  3, types, vals, NULL, true, 0, SPI_OK_SELECT);
		}
		if (s->nhole_cands + (int) got > nholes)
			elog(ERROR, "more hole candidates than holes");
		stream_collect(got, src, s->hole_cands, &s->nhole_cands);
	}
	qsort(s->hole_cands, s->nhole_cands, sizeof(KzCandidate), stream_cmp_candidate);
}

const KzPullSource *
kz_stream_ungranted_tombstones(const KzPullStream *s, int64 lo, int64 hi,
							   const int64 *holes, int nholes)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(nholes, 1));
	ArrayType  *arr;
	int			i;

	for (i = 0; i < nholes; i++)
		elems[i] = Int64GetDatum(holes[i]);
	arr = construct_array(elems, nholes, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	for (i = 0; i < s->nsources; i++)
	{
		const KzPullSource *src = &s->sources[i];
		KzPullSource probe;
		Oid			types[7] = {TEXTOID, TEXTOID, TEXTOID, JSONBOID, INT8OID, INT8OID, INT8ARRAYOID};
		Datum		vals[7];
		int			base = 2;
		uint64		got;

		if (src->tombstones || src->granted)
			continue;
		/* the tombstone source the grant would add */
		probe = *src;
		probe.tombstones = true;
		vals[0] = CStringGetTextDatum(src->table->conf->table_name);
		vals[1] = CStringGetTextDatum(src->label);
		if (stream_snapshot_filter(&probe))
		{
			vals[2] = CStringGetTextDatum(src->table->conf->bucket_column);
			vals[3] = JsonbPGetDatum(src->bucket_json);
			base = 4;
		}
		types[base] = INT8OID;
		types[base + 1] = INT8OID;
		types[base + 2] = INT8ARRAYOID;
		vals[base] = Int64GetDatum(lo);
		vals[base + 1] = Int64GetDatum(hi);
		vals[base + 2] = PointerGetDatum(arr);
		got = kz_spi_priv(stream_select(&probe, base == 4
										? " AND ((seq OPERATOR(pg_catalog.>) $5 AND seq OPERATOR(pg_catalog.<=) $6) OR seq OPERATOR(pg_catalog.=) ANY ($7)) LIMIT 1"
										: " AND ((seq OPERATOR(pg_catalog.>) $3 AND seq OPERATOR(pg_catalog.<=) $4) OR seq OPERATOR(pg_catalog.=) ANY ($5)) LIMIT 1"),
						  base + 3, types, vals, NULL, true, 1, SPI_OK_SELECT);
		SPI_freetuptable(SPI_tuptable);
		if (got > 0)
			return src;
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
		Oid			types[7] = {TEXTOID, TEXTOID, TEXTOID, JSONBOID, INT8OID, INT8OID, INT8OID};
		Datum		vals[7];
		uint64		got;
		int			base;

		short_last[i] = -1;
		if (src->exhausted)
			continue;
		vals[0] = CStringGetTextDatum(src->table->conf->table_name);
		vals[1] = CStringGetTextDatum(src->label);
		base = 2;
		if (stream_snapshot_filter(src))
		{
			vals[2] = CStringGetTextDatum(src->table->conf->bucket_column);
			vals[3] = JsonbPGetDatum(src->bucket_json);
			base = 4;
		}
		types[base] = INT8OID;
		types[base + 1] = INT8OID;
		types[base + 2] = INT8OID;
		vals[base] = Int64GetDatum(s->window_pos);
		vals[base + 1] = Int64GetDatum(s->window_hi);
		vals[base + 2] = Int64GetDatum((int64) m);
		got = kz_spi_priv(stream_select(src, base == 4
										? " AND seq OPERATOR(pg_catalog.>) $5 AND seq OPERATOR(pg_catalog.<=) $6"
										" ORDER BY seq LIMIT $7"
										: " AND seq OPERATOR(pg_catalog.>) $3 AND seq OPERATOR(pg_catalog.<=) $4"
										" ORDER BY seq LIMIT $5"),
						  base + 3, types, vals, NULL, true, 0, SPI_OK_SELECT);
		stream_collect(got, src, merged, &nmerged);
		/* a short source has nothing past its last row; -1: a full one */
		if ((int) got < m)
			short_last[i] = got > 0 ? merged[nmerged - 1].seq : 0;
		else if (merged[nmerged - 1].seq < bound)
			bound = merged[nmerged - 1].seq;
	}
	qsort(merged, nmerged, sizeof(KzCandidate), stream_cmp_candidate);
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
