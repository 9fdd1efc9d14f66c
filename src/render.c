/*-------------------------------------------------------------------------
 *
 * render.c
 *	  Rendering application rows (render.h).
 *
 *	  A batch of keys is read with one statement:
 *	    SELECT u.o, to_jsonb(r.*)
 *	      FROM ROWS FROM (unnest($1), ..., unnest($k)) WITH ORDINALITY AS u(a1, ..., ak, o),
 *	           LATERAL (SELECT t.<col>, ... FROM ONLY <table> t
 *	                     WHERE t.<key1> = u.a1 AND ... OFFSET 0) r
 *	  The OFFSET 0 keeps the subquery from being flattened into a hash join
 *	  that would read the whole table: each key is one primary-key index
 *	  probe, so the cost follows the batch, not the table.  A table with one
 *	  integer or uuid key is read with one "key = ANY ($1)" index scan and
 *	  the rows matched back by key text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "render.h"
#include "rowkey.h"
#include "spi.h"

char *
kz_render_key_predicate(KzTableDesc *t, int base)
{
	StringInfoData s;
	int			i;

	initStringInfo(&s);
	for (i = 0; i < t->conf->nkeys; i++)
		appendStringInfo(&s, "%st.%s OPERATOR(pg_catalog.=) $%d", i ? " AND " : "",
						 quote_identifier(t->conf->key_columns[i]), base + i + 1);
	return s.data;
}

/* One key column whose equality is bitwise: read the batch with "= ANY". */
static bool
render_by_any(const KzTableConf *c)
{
	return c->nkeys == 1 &&
		(c->key_types[0] == INT2OID || c->key_types[0] == INT4OID ||
		 c->key_types[0] == INT8OID || c->key_types[0] == UUIDOID);
}

/* " AND t.col OPERATOR(pg_catalog.=) $<base+1> ..." of a filter. */
static void
render_filter_sql(StringInfo sql, const KzRenderFilter *filter, int base)
{
	int			i;

	for (i = 0; filter != NULL && i < filter->n; i++)
		appendStringInfo(sql, " AND t.%s OPERATOR(pg_catalog.=) $%d",
						 quote_identifier(filter->cols[i]->name), base + i + 1);
}

static char *
render_batch_sql(KzTableDesc *t, const KzRenderFilter *filter)
{
	KzTableConf *c = t->conf;
	StringInfoData sql;
	int			i;

	initStringInfo(&sql);
	if (render_by_any(c))
	{
		appendStringInfo(&sql, "SELECT r.%s, pg_catalog.to_jsonb(r.*) FROM (SELECT %s"
						 " FROM ONLY %s t WHERE t.%s OPERATOR(pg_catalog.=) ANY ($1)",
						 quote_identifier(c->key_columns[0]), t->projection, t->qualname,
						 quote_identifier(c->key_columns[0]));
		render_filter_sql(&sql, filter, 1);
		appendStringInfoString(&sql, " OFFSET 0) r");
		return sql.data;
	}
	appendStringInfoString(&sql, "SELECT u.o, pg_catalog.to_jsonb(r.*) FROM ROWS FROM (");
	for (i = 0; i < c->nkeys; i++)
		appendStringInfo(&sql, "%spg_catalog.unnest($%d)", i ? ", " : "", i + 1);
	appendStringInfoString(&sql, ") WITH ORDINALITY AS u(");
	for (i = 0; i < c->nkeys; i++)
		appendStringInfo(&sql, "a%d, ", i + 1);
	appendStringInfo(&sql, "o), LATERAL (SELECT %s FROM ONLY %s t WHERE ", t->projection,
					 t->qualname);
	for (i = 0; i < c->nkeys; i++)
		appendStringInfo(&sql, "%st.%s OPERATOR(pg_catalog.=) u.a%d",
						 i ? " AND " : "", quote_identifier(c->key_columns[i]), i + 1);
	render_filter_sql(&sql, filter, c->nkeys);
	appendStringInfoString(&sql, " OFFSET 0) r");
	return sql.data;
}

typedef struct RenderPos
{
	const char *pk;
	int			pos;
} RenderPos;

static int
render_cmp_pos(const void *a, const void *b)
{
	return strcmp(((const RenderPos *) a)->pk, ((const RenderPos *) b)->pk);
}

void
kz_render_batch(KzTableDesc *t, char **pks, int n, Jsonb **rows, const KzRenderFilter *filter)
{
	KzTableConf *c = t->conf;
	int			nfilter = filter != NULL ? filter->n : 0;
	int		   *pos = palloc(sizeof(int) * Max(n, 1));
	Datum	  **keyvals = palloc(sizeof(Datum *) * c->nkeys);
	Datum	   *args = palloc(sizeof(Datum) * (c->nkeys + nfilter));
	Oid		   *argtypes = palloc(sizeof(Oid) * (c->nkeys + nfilter));
	Datum	   *one = palloc(sizeof(Datum) * c->nkeys);
	int			cnt = 0;
	int			i,
				k;
	uint64		r;
	uint64		nres;

	for (i = 0; i < n; i++)
		rows[i] = NULL;
	if (t->projection == NULL || !t->keys_readable)
		return;
	for (k = 0; k < c->nkeys; k++)
	{
		keyvals[k] = palloc(sizeof(Datum) * Max(n, 1));
		argtypes[k] = get_array_type(c->key_types[k]);
		if (!OidIsValid(argtypes[k]))
			elog(ERROR, "key type %u of table \"%s\" has no array type",
				 c->key_types[k], c->table_name);
	}
	for (i = 0; i < n; i++)
	{
		if (!kz_rowkey_parse(c, pks[i], one))
			continue;			/* not a key of this table: no row */
		for (k = 0; k < c->nkeys; k++)
			keyvals[k][cnt] = one[k];
		pos[cnt++] = i;
	}
	if (cnt == 0)
		return;
	for (k = 0; k < c->nkeys; k++)
	{
		int16		typlen;
		bool		typbyval;
		char		typalign;

		get_typlenbyvalalign(c->key_types[k], &typlen, &typbyval, &typalign);
		args[k] = PointerGetDatum(construct_array(keyvals[k], cnt, c->key_types[k],
												  typlen, typbyval, typalign));
	}

	for (k = 0; k < nfilter; k++)
	{
		argtypes[c->nkeys + k] = filter->cols[k]->typid;
		args[c->nkeys + k] = filter->values[k];
	}

	nres = kz_spi_run(render_batch_sql(t, filter), c->nkeys + nfilter, argtypes, args, NULL,
					  true, 0, SPI_OK_SELECT);
	if (render_by_any(c))
	{
		/* match each row to every candidate of the batch with its key */
		RenderPos  *byk = palloc(sizeof(RenderPos) * cnt);

		for (i = 0; i < cnt; i++)
		{
			byk[i].pk = pks[pos[i]];
			byk[i].pos = pos[i];
		}
		qsort(byk, cnt, sizeof(RenderPos), render_cmp_pos);
		for (r = 0; r < nres; r++)
		{
			HeapTuple	tup = SPI_tuptable->vals[r];
			bool		isnull;
			bool		jnull;
			Datum		kd = SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull);
			Datum		d = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &jnull);
			RenderPos	key;
			RenderPos  *hit;
			Jsonb	   *row;

			if (isnull || jnull)
				elog(ERROR, "render query returned an unexpected row");
			key.pk = kz_rowkey_render(c, &kd, &isnull);
			hit = bsearch(&key, byk, cnt, sizeof(RenderPos), render_cmp_pos);
			if (hit == NULL)
				elog(ERROR, "render query returned a row that was not asked for");
			while (hit > byk && strcmp(hit[-1].pk, key.pk) == 0)
				hit--;
			row = DatumGetJsonbP(d);
			for (; hit < byk + cnt && strcmp(hit->pk, key.pk) == 0; hit++)
				rows[hit->pos] = row;
		}
		return;
	}
	for (r = 0; r < nres; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		bool		isnull;
		int64		o = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		Datum		d = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull);

		if (o < 1 || o > cnt || isnull)
			elog(ERROR, "render query returned an unexpected row");
		/* no copy: the result stays until SPI_finish, after the page is built */
		rows[pos[o - 1]] = DatumGetJsonbP(d);
	}
}

Jsonb *
kz_render_row(KzTableDesc *t, Datum *keyvals, bool lock)
{
	int			nk = t->conf->nkeys;
	Oid		   *types;
	Jsonb	   *row = NULL;
	bool		isnull;
	Datum		d;
	char	   *sql;

	if (t->projection == NULL || !t->keys_readable)
		return NULL;
	if (lock && !t->can_update_any)
		return NULL;
	types = palloc(sizeof(Oid) * nk);
	memcpy(types, t->conf->key_types, sizeof(Oid) * nk);
	sql = psprintf("SELECT pg_catalog.to_jsonb(r.*) FROM (SELECT %s FROM ONLY %s t WHERE %s%s) r",
				   t->projection, t->qualname, kz_render_key_predicate(t, 0),
				   lock ? " FOR NO KEY UPDATE" : "");
	if (kz_spi_run(sql, nk, types, keyvals, NULL, false, 1, SPI_OK_SELECT) > 0)
	{
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull)
			row = DatumGetJsonbPCopy(d);
	}
	SPI_freetuptable(SPI_tuptable);
	pfree(sql);
	pfree(types);
	return row;
}
