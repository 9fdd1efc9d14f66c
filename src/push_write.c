/*-------------------------------------------------------------------------
 *
 * push_write.c
 *	  The statements of a push mutation against its application row
 *	  (push_write.h).  Column values reach the table through
 *	  jsonb_populate_record of the table's row type, so they are converted
 *	  by the column types, as the caller.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "jsonbutil.h"
#include "push_write.h"
#include "render.h"
#include "spi.h"

bool
kz_push_column_denied(KzTableDesc *t, const KzMutationReq *m)
{
	int			i;

	if (m->op == KZ_OP_DELETE)
		return !t->can_delete;
	for (i = 0; i < m->ncolumns; i++)
	{
		KzColumn   *c = kz_tabledesc_column(t, m->columns[i]);

		if (c == NULL || c->generated)
			return true;
		if (c->is_key)
		{
			if (m->op == KZ_OP_UPDATE || !c->can_insert)
				return true;
		}
		else if (!c->can_update || (m->op == KZ_OP_INSERT && !c->can_insert))
			return true;
	}
	for (i = 0; i < m->ntransforms; i++)
	{
		KzColumn   *c = kz_tabledesc_column(t, m->transforms[i].column);

		if (c == NULL || c->generated || c->is_key || !c->can_update)
			return true;
	}
	if (m->op == KZ_OP_INSERT)
	{
		for (i = 0; i < t->ncols; i++)
			if (t->cols[i].is_key && !t->cols[i].can_insert)
				return true;
	}
	return false;
}

void
kz_push_key_params(KzTableDesc *t, Datum *keyvals, int nextra, Oid *types, Datum *values)
{
	int			i;

	for (i = 0; i < t->conf->nkeys; i++)
	{
		types[nextra + i] = t->conf->key_types[i];
		values[nextra + i] = keyvals[i];
	}
}

/* Is every precondition column one the caller can read? */
static bool
write_precondition_readable(KzTableDesc *t, const KzMutationReq *m)
{
	int			i;

	for (i = 0; i < m->nprecond; i++)
	{
		KzColumn   *c = kz_tabledesc_column(t, m->precond_columns[i]);

		if (c == NULL || !c->can_select)
			return false;
	}
	return true;
}

/* ", c1, c2" / ", r.c1, r.c2" / "c1 = <fmt>, ..." of names[]. */
static void
write_column_lists(const char **names, int n, StringInfo cols, StringInfo rcols, StringInfo set,
				   const char *setfmt)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		const char *q = quote_identifier(names[i]);

		if (cols)
			appendStringInfo(cols, ", %s", q);
		if (rcols)
			appendStringInfo(rcols, ", r.%s", q);
		if (set)
		{
			if (set->len > 0)
				appendStringInfoString(set, ", ");
			appendStringInfo(set, setfmt, q, q);
		}
	}
}

/*
 * Typed precondition check against the caller-visible row: each expected
 * value goes through the column type (jsonb_populate_record) and is
 * compared with the row's rendered value.  A type error raises class 22.
 */
bool
kz_push_precondition_holds(KzTableDesc *t, const KzMutationReq *m, Jsonb *row,
						   Jsonb *precondition)
{
	Oid			types[2] = {JSONBOID, JSONBOID};
	Datum		values[2];
	bool		isnull;
	Datum		d;
	bool		holds;

	if (!m->has_precondition || m->nprecond == 0)
		return true;
	if (row == NULL || !write_precondition_readable(t, m))
		return false;
	values[0] = JsonbPGetDatum(row);
	values[1] = JsonbPGetDatum(precondition);
	kz_spi_run(psprintf("SELECT pg_catalog.bool_and(COALESCE(($1 OPERATOR(pg_catalog.->) e.key)"
						" OPERATOR(pg_catalog.=) (pg_catalog.to_jsonb(r.*) OPERATOR(pg_catalog.->) e.key),"
						" ($1 OPERATOR(pg_catalog.->) e.key) IS NULL"
						" AND (pg_catalog.to_jsonb(r.*) OPERATOR(pg_catalog.->) e.key) IS NULL))"
						" FROM pg_catalog.jsonb_populate_record(NULL::%s, $2) r,"
						" pg_catalog.jsonb_each($2) e", t->qualname),
			   2, types, values, NULL, true, 1, SPI_OK_SELECT);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	holds = isnull || DatumGetBool(d);
	SPI_freetuptable(SPI_tuptable);
	return holds;
}

bool
kz_push_insert_keys_agree(KzTableDesc *t, const KzMutationReq *m, Datum *keyvals,
						  Jsonb *columns)
{
	int			nk = t->conf->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * (nk + 1));
	Datum	   *values = palloc(sizeof(Datum) * (nk + 1));
	StringInfoData cond;
	int			i;
	bool		isnull;
	bool		agree;
	Datum		d;

	initStringInfo(&cond);
	for (i = 0; i < nk; i++)
	{
		int			j;

		for (j = 0; j < m->ncolumns; j++)
			if (strcmp(m->columns[j], t->conf->key_columns[i]) == 0)
				break;
		if (j == m->ncolumns)
			continue;
		/* the parameter is never null: equal and not null */
		appendStringInfo(&cond, "%sCOALESCE(r.%s OPERATOR(pg_catalog.=) $%d, false)",
						 cond.len ? " AND " : "", quote_identifier(t->conf->key_columns[i]), i + 2);
	}
	if (cond.len == 0)
		return true;
	types[0] = JSONBOID;
	values[0] = JsonbPGetDatum(columns);
	kz_push_key_params(t, keyvals, 1, types, values);
	kz_spi_run(psprintf("SELECT %s FROM pg_catalog.jsonb_populate_record(NULL::%s, $1) r",
						cond.data, t->qualname),
			   nk + 1, types, values, NULL, true, 1, SPI_OK_SELECT);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	agree = !isnull && DatumGetBool(d);
	SPI_freetuptable(SPI_tuptable);
	return agree;
}

void
kz_push_upsert(KzTableDesc *t, Datum *keyvals, Jsonb *columns, const char **names, int n)
{
	int			nk = t->conf->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * (nk + 1));
	Datum	   *values = palloc(sizeof(Datum) * (nk + 1));
	StringInfoData keys,
				params,
				cols,
				rcols,
				set;
	const char **nonkey = palloc(sizeof(char *) * (n + 1));
	int			nnk = 0;
	int			i;

	for (i = 0; i < n; i++)
		if (!kz_tabledesc_column(t, names[i])->is_key)
			nonkey[nnk++] = names[i];
	types[0] = JSONBOID;
	values[0] = JsonbPGetDatum(columns);
	kz_push_key_params(t, keyvals, 1, types, values);
	initStringInfo(&keys);
	initStringInfo(&params);
	for (i = 0; i < nk; i++)
	{
		appendStringInfo(&keys, "%s%s", i ? ", " : "", quote_identifier(t->conf->key_columns[i]));
		appendStringInfo(&params, "%s$%d", i ? ", " : "", i + 2);
	}
	initStringInfo(&cols);
	initStringInfo(&rcols);
	initStringInfo(&set);
	write_column_lists(nonkey, nnk, &cols, &rcols, &set, "%s = EXCLUDED.%s");
	if (nnk == 0)
	{
		const char *k = quote_identifier(t->conf->key_columns[0]);

		appendStringInfo(&set, "%s = EXCLUDED.%s", k, k);
	}
	kz_spi_run(psprintf("INSERT INTO %s AS t (%s%s) SELECT %s%s"
						" FROM pg_catalog.jsonb_populate_record(NULL::%s, $1) r"
						" ON CONFLICT (%s) DO UPDATE SET %s",
						t->qualname, keys.data, cols.data, params.data, rcols.data,
						t->qualname, keys.data, set.data),
			   nk + 1, types, values, NULL, false, 0, SPI_OK_INSERT);
}

uint64
kz_push_update(KzTableDesc *t, Datum *keyvals, Jsonb *columns, const char **names, int n)
{
	int			nk = t->conf->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * (nk + 1));
	Datum	   *values = palloc(sizeof(Datum) * (nk + 1));
	StringInfoData set;

	if (n == 0)
		return 0;
	types[0] = JSONBOID;
	values[0] = JsonbPGetDatum(columns);
	kz_push_key_params(t, keyvals, 1, types, values);
	initStringInfo(&set);
	write_column_lists(names, n, NULL, NULL, &set, "%s = r.%s");
	return kz_spi_run(psprintf("UPDATE ONLY %s AS t SET %s"
							   " FROM pg_catalog.jsonb_populate_record(NULL::%s, $1) r WHERE %s",
							   t->qualname, set.data, t->qualname, kz_render_key_predicate(t, 1)),
					  nk + 1, types, values, NULL, false, 0, SPI_OK_UPDATE);
}

uint64
kz_push_delete(KzTableDesc *t, const KzMutationReq *m, Datum *keyvals, Jsonb *precondition)
{
	int			nk = t->conf->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * (nk + 1));
	Datum	   *values = palloc(sizeof(Datum) * (nk + 1));
	StringInfoData sql;
	int			i;

	if (m->has_precondition && !write_precondition_readable(t, m))
		return 0;
	types[0] = JSONBOID;
	values[0] = precondition ? JsonbPGetDatum(precondition)
		: DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
	kz_push_key_params(t, keyvals, 1, types, values);
	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM ONLY %s AS t USING pg_catalog.jsonb_populate_record(NULL::%s, $1) r"
					 " WHERE %s", t->qualname, t->qualname, kz_render_key_predicate(t, 1));
	for (i = 0; m->has_precondition && i < m->nprecond; i++)
	{
		const char *q = quote_identifier(m->precond_columns[i]);

		appendStringInfo(&sql, " AND COALESCE(pg_catalog.to_jsonb(t.%s) OPERATOR(pg_catalog.=) pg_catalog.to_jsonb(r.%s),"
						 " t.%s IS NULL AND r.%s IS NULL)", q, q, q, q);
	}
	return kz_spi_run(sql.data, nk + 1, types, values, NULL, false, 0, SPI_OK_DELETE);
}
