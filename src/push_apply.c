/*-------------------------------------------------------------------------
 *
 * push_apply.c
 *	  The per-mutation decision of kizunasync.push: column gate, row lock,
 *	  removed-row check, preconditions, writes (as the caller), HLC mode and
 *	  the conflict journal.  The order is SPEC §5.4; the deviations are in
 *	  decisions/0030-push-validation-and-gate.md.
 *
 *	  Every statement that reads or writes an application table runs as the
 *	  caller (kz_spi_as_caller), so RLS policies and column privileges apply.
 *	  Bookkeeping tables are read and written as the extension owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "hlc.h"
#include "identity.h"
#include "kizunasync.h"
#include "jsonbutil.h"
#include "push_internal.h"
#include "sequencing.h"

/* A rejection decided inside the unit. */
typedef struct UnitState
{
	KzMutationCtx *ctx;
	Jsonb	   *row;			/* caller-visible row before the unit */
	Jsonb	   *locked;
	Jsonb	   *columns;		/* {} when absent */
	Jsonb	   *precondition;	/* NULL when absent */
} UnitState;

KzColumn *
kz_push_column(KzPushTable *tab, const char *name)
{
	int			i;

	for (i = 0; i < tab->ncols; i++)
		if (strcmp(tab->cols[i].name, name) == 0)
			return &tab->cols[i];
	return NULL;
}

Jsonb *
kz_jsonb_get(Jsonb *obj, const char *key)
{
	JsonbValue *v;

	if (obj == NULL || !JB_ROOT_IS_OBJECT(obj) || JB_ROOT_IS_SCALAR(obj))
		return NULL;
	v = getKeyJsonValueFromContainer(&obj->root, key, strlen(key), NULL);
	if (v == NULL)
		return NULL;
	return JsonbValueToJsonb(v);
}

char *
kz_jsonb_scalar_text(JsonbValue *v)
{
	/* scalars only: JSON null and containers have no scalar text */
	if (v->type == jbvNull || v->type == jbvArray || v->type == jbvObject ||
		v->type == jbvBinary)
		return NULL;
	return kz_jsonb_text(v);
}

/* The scalar of a one-scalar jsonb (as kz_jsonb_get returns for scalars). */
static bool
jsonb_scalar(Jsonb *jb, JsonbValue *out)
{
	return jb != NULL && JsonbExtractScalar(&jb->root, out);
}

/* "t.k1 = $<base+1> AND t.k2 = $<base+2>" */
static char *
key_pred(KzPushTable *tab, int base)
{
	StringInfoData s;
	int			i;

	initStringInfo(&s);
	for (i = 0; i < tab->conf->nkeys; i++)
		appendStringInfo(&s, "%st.%s = $%d", i ? " AND " : "",
						 quote_identifier(tab->conf->key_columns[i]), base + i + 1);
	return s.data;
}

/* Parameters: leading extra ones, then the key values. */
static void
key_params(KzPushTable *tab, Datum *keyvals, int nextra, Oid *types, Datum *values)
{
	int			i;

	for (i = 0; i < tab->conf->nkeys; i++)
	{
		types[nextra + i] = tab->conf->key_types[i];
		values[nextra + i] = keyvals[i];
	}
}

Jsonb *
kz_push_render_row(KzPushTable *tab, Datum *keyvals, bool lock)
{
	StringInfoData sql;
	Oid		   *types;
	Datum	   *values;
	bool		isnull;
	Datum		d;
	int			nk = tab->conf->nkeys;

	if (tab->projection == NULL || !tab->keys_readable)
		return NULL;
	if (lock && !tab->can_update_any)
		return NULL;
	types = palloc(sizeof(Oid) * nk);
	values = palloc(sizeof(Datum) * nk);
	key_params(tab, keyvals, 0, types, values);
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT pg_catalog.to_jsonb(r) FROM (SELECT %s FROM %s AS t WHERE %s%s) r",
					 tab->projection, tab->qname, key_pred(tab, 0),
					 lock ? " FOR NO KEY UPDATE" : "");
	kz_spi_as_caller(sql.data, nk, types, values, NULL, !lock, 1);
	if (SPI_processed == 0)
		return NULL;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? NULL : DatumGetJsonbPCopy(d);
}

/* Does the row exist at all (as the owner, no RLS)? */
static bool
row_exists_as_owner(KzPushTable *tab, Datum *keyvals)
{
	int			nk = tab->conf->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * nk);
	Datum	   *values = palloc(sizeof(Datum) * nk);
	char	   *sql;

	key_params(tab, keyvals, 0, types, values);
	sql = psprintf("SELECT 1 FROM %s AS t WHERE %s", tab->qname, key_pred(tab, 0));
	kz_spi_as_owner(sql, nk, types, values, NULL, true, 1);
	return SPI_processed > 0;
}

/* ------------------------------------------------------------------ gate */

static bool
column_write_denied(KzPushTable *tab, KzMutationReq *m)
{
	int			i;

	if (m->op == KZ_OP_DELETE)
		return !tab->can_delete;
	for (i = 0; i < m->ncolumns; i++)
	{
		KzColumn   *c = kz_push_column(tab, m->columns[i]);

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
		KzColumn   *c = kz_push_column(tab, m->transforms[i].column);

		if (c == NULL || c->generated || c->is_key || !c->can_update)
			return true;
	}
	if (m->op == KZ_OP_INSERT)
	{
		for (i = 0; i < tab->ncols; i++)
			if (tab->cols[i].is_key && !tab->cols[i].can_insert)
				return true;
	}
	return false;
}

/* ------------------------------------------------------- removed-row check */

/*
 * The newest tombstone of (table, pk) that no newer upsert follows.
 * Returns its bucket value, or NULL when there is none.
 */
static char *
live_tombstone(KzPushTable *tab, const char *pk)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(tab->conf->table_name);
	values[1] = CStringGetTextDatum(pk);
	kz_spi_as_owner("SELECT t.bucket_value FROM kizunasync.tombstones t"
					" WHERE t.table_name = $1 AND t.pk = $2"
					" AND NOT EXISTS (SELECT 1 FROM kizunasync.changelog c"
					"   WHERE c.table_name = t.table_name AND c.pk = t.pk AND c.seq > t.seq)"
					" ORDER BY t.seq DESC LIMIT 1",
					2, types, values, NULL, true, 1);
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

static bool
caller_holds_grant(KzPushTable *tab, const char *bucket_value)
{
	pg_uuid_t	uid;
	pg_uuid_t  *u;
	Oid			types[3] = {UUIDOID, TEXTOID, TEXTOID};
	Datum		values[3];

	if (!kz_caller_uid(&uid))
		return false;
	u = palloc(sizeof(pg_uuid_t));
	memcpy(u, &uid, sizeof(pg_uuid_t));
	values[0] = UUIDPGetDatum(u);
	values[1] = CStringGetTextDatum(tab->conf->table_name);
	values[2] = CStringGetTextDatum(bucket_value);
	kz_spi_as_owner("SELECT 1 FROM kizunasync.bucket_grants"
					" WHERE user_id = $1 AND table_name = $2 AND bucket_value = $3",
					3, types, values, NULL, true, 1);
	return SPI_processed > 0;
}

/*
 * Rows deleted earlier in this push call (non-atomic batches flush each
 * mutation, so the capture queue no longer shows them).
 */
typedef struct DeletedRow
{
	char	   *table;
	char	   *pk;
	struct DeletedRow *next;
} DeletedRow;

static DeletedRow *deleted_rows = NULL;

void
kz_push_reset_deleted(void)
{
	deleted_rows = NULL;
}

static void
remember_delete(KzPushTable *tab, const char *pk)
{
	DeletedRow *d = palloc(sizeof(DeletedRow));

	d->table = pstrdup(tab->conf->table_name);
	d->pk = pstrdup(pk);
	d->next = deleted_rows;
	deleted_rows = d;
}

/* 'd': deleted here; 'u': written here since; '\0': nothing */
static char
deleted_here(KzPushTable *tab, const char *pk)
{
	DeletedRow *d;
	char		q = kz_capture_queued_op(tab->conf->table_name, pk);

	if (q != '\0')
		return q;
	for (d = deleted_rows; d; d = d->next)
		if (strcmp(d->table, tab->conf->table_name) == 0 && strcmp(d->pk, pk) == 0)
			return 'd';
	return '\0';
}

/* ------------------------------------------------------------ writes */

/* Column list "c1, c2" and "r.c1, r.c2" of names[]. */
static void
column_lists(const char **names, int n, StringInfo cols, StringInfo rcols, StringInfo set,
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

static void
apply_upsert(KzPushTable *tab, Datum *keyvals, Jsonb *columns, const char **names, int n)
{
	int			nk = tab->conf->nkeys;
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
		if (!kz_push_column(tab, names[i])->is_key)
			nonkey[nnk++] = names[i];
	types[0] = JSONBOID;
	values[0] = JsonbPGetDatum(columns);
	key_params(tab, keyvals, 1, types, values);
	initStringInfo(&keys);
	initStringInfo(&params);
	for (i = 0; i < nk; i++)
	{
		appendStringInfo(&keys, "%s%s", i ? ", " : "", quote_identifier(tab->conf->key_columns[i]));
		appendStringInfo(&params, "%s$%d", i ? ", " : "", i + 2);
	}
	initStringInfo(&cols);
	initStringInfo(&rcols);
	initStringInfo(&set);
	column_lists(nonkey, nnk, &cols, &rcols, &set, "%s = EXCLUDED.%s");
	if (nnk == 0)
	{
		const char *k = quote_identifier(tab->conf->key_columns[0]);

		appendStringInfo(&set, "%s = EXCLUDED.%s", k, k);
	}
	kz_spi_as_caller(psprintf("INSERT INTO %s AS t (%s%s) SELECT %s%s"
							  " FROM pg_catalog.jsonb_populate_record(NULL::%s, $1) r"
							  " ON CONFLICT (%s) DO UPDATE SET %s",
							  tab->qname, keys.data, cols.data, params.data, rcols.data,
							  tab->qname, keys.data, set.data),
					 nk + 1, types, values, NULL, false, 0);
}

static uint64
apply_update_masked(KzPushTable *tab, Datum *keyvals, Jsonb *columns, const char **names, int n)
{
	int			nk = tab->conf->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * (nk + 1));
	Datum	   *values = palloc(sizeof(Datum) * (nk + 1));
	StringInfoData set;

	if (n == 0)
		return 0;
	types[0] = JSONBOID;
	values[0] = JsonbPGetDatum(columns);
	key_params(tab, keyvals, 1, types, values);
	initStringInfo(&set);
	column_lists(names, n, NULL, NULL, &set, "%s = r.%s");
	kz_spi_as_caller(psprintf("UPDATE %s AS t SET %s"
							  " FROM pg_catalog.jsonb_populate_record(NULL::%s, $1) r WHERE %s",
							  tab->qname, set.data, tab->qname, key_pred(tab, 1)),
					 nk + 1, types, values, NULL, false, 0);
	return SPI_processed;
}

/* Is every precondition column one the caller can read? */
static bool
precondition_readable(KzPushTable *tab, KzMutationReq *m)
{
	int			i;

	for (i = 0; i < m->nprecond; i++)
	{
		KzColumn   *c = kz_push_column(tab, m->precond_columns[i]);

		if (c == NULL || !c->can_select)
			return false;
	}
	return true;
}

static uint64
apply_delete(KzPushTable *tab, KzMutationReq *m, Datum *keyvals, Jsonb *precondition)
{
	int			nk = tab->conf->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * (nk + 1));
	Datum	   *values = palloc(sizeof(Datum) * (nk + 1));
	StringInfoData sql;
	int			i;

	if (m->has_precondition && !precondition_readable(tab, m))
		return 0;
	types[0] = JSONBOID;
	values[0] = precondition ? JsonbPGetDatum(precondition)
		: DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
	key_params(tab, keyvals, 1, types, values);
	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s AS t USING pg_catalog.jsonb_populate_record(NULL::%s, $1) r"
					 " WHERE %s", tab->qname, tab->qname, key_pred(tab, 1));
	for (i = 0; m->has_precondition && i < m->nprecond; i++)
	{
		const char *q = quote_identifier(m->precond_columns[i]);

		appendStringInfo(&sql, " AND pg_catalog.to_jsonb(t.%s) IS NOT DISTINCT FROM pg_catalog.to_jsonb(r.%s)",
						 q, q);
	}
	kz_spi_as_caller(sql.data, nk + 1, types, values, NULL, false, 0);
	return SPI_processed;
}

/*
 * Typed precondition check against the caller-visible row: each expected
 * value goes through the column type (jsonb_populate_record) and is
 * compared with the row's rendered value.  A type error raises class 22.
 */
static bool
precondition_holds(KzPushTable *tab, KzMutationReq *m, Jsonb *row, Jsonb *precondition)
{
	Oid			types[2] = {JSONBOID, JSONBOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	bool		isnull;
	Datum		d;

	if (!m->has_precondition || m->nprecond == 0)
		return true;
	if (row == NULL || !precondition_readable(tab, m))
		return false;
	values[0] = JsonbPGetDatum(row);
	values[1] = JsonbPGetDatum(precondition);
	kz_spi_as_caller(psprintf("SELECT pg_catalog.bool_and(($1 -> e.key) IS NOT DISTINCT FROM"
							  " (pg_catalog.to_jsonb(r) -> e.key))"
							  " FROM pg_catalog.jsonb_populate_record(NULL::%s, $2) r,"
							  " pg_catalog.jsonb_each($2) e", tab->qname),
					 2, types, values, nulls, true, 1);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull || DatumGetBool(d);
}

/*
 * Insert key authority: key columns named in columns must equal the pk's
 * components (compared through the column type).
 */
static bool
insert_keys_agree(KzPushTable *tab, KzMutationReq *m, Datum *keyvals, Jsonb *columns)
{
	int			nk = tab->conf->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * (nk + 1));
	Datum	   *values = palloc(sizeof(Datum) * (nk + 1));
	StringInfoData cond;
	int			i;
	bool		isnull;
	Datum		d;

	initStringInfo(&cond);
	for (i = 0; i < nk; i++)
	{
		int			j;

		for (j = 0; j < m->ncolumns; j++)
			if (strcmp(m->columns[j], tab->conf->key_columns[i]) == 0)
				break;
		if (j == m->ncolumns)
			continue;
		appendStringInfo(&cond, "%s(r.%s IS NOT DISTINCT FROM $%d)", cond.len ? " AND " : "",
						 quote_identifier(tab->conf->key_columns[i]), i + 2);
	}
	if (cond.len == 0)
		return true;
	types[0] = JSONBOID;
	values[0] = JsonbPGetDatum(columns);
	key_params(tab, keyvals, 1, types, values);
	kz_spi_as_caller(psprintf("SELECT %s FROM pg_catalog.jsonb_populate_record(NULL::%s, $1) r",
							  cond.data, tab->qname),
					 nk + 1, types, values, NULL, true, 1);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return !isnull && DatumGetBool(d);
}

/* ------------------------------------------------------------ journal */

static void
journal_overwrites(UnitState *u, const char **names, int n, Jsonb *prior)
{
	KzPushTable *tab = u->ctx->tab;
	Jsonb	   *after;
	Oid			types[7] = {TEXTOID, TEXTOID, UUIDOID, TEXTOID, JSONBOID, TEXTARRAYOID, JSONBOID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	Datum	   *cols;
	int			ncols = 0;
	int			i;

	if (!tab->conf->conflict_journal || prior == NULL || n == 0)
		return;
	cols = palloc(sizeof(Datum) * n);
	for (i = 0; i < n; i++)
		if (!kz_push_column(tab, names[i])->is_key)
			cols[ncols++] = CStringGetTextDatum(names[i]);
	if (ncols == 0)
		return;
	after = kz_push_render_row(tab, u->ctx->keyvals, false);
	values[0] = CStringGetTextDatum(tab->conf->table_name);
	values[1] = CStringGetTextDatum(u->ctx->req->pk);
	values[2] = DirectFunctionCall1(uuid_in, CStringGetDatum(u->ctx->req->mutation_id));
	values[3] = CStringGetTextDatum(tab->conf->hlc ? "hlc" : "arrival");
	values[4] = JsonbPGetDatum(prior);
	values[5] = PointerGetDatum(construct_array(cols, ncols, TEXTOID, -1, false, TYPALIGN_INT));
	if (after)
		values[6] = JsonbPGetDatum(after);
	else
		nulls[6] = 'n';
	kz_spi_as_owner("INSERT INTO kizunasync.conflict_journal"
					" (table_name, pk, column_name, loser_value, winner_mutation_id, conflict_mode)"
					" SELECT $1, $2, e.key, e.value, $3, $4 FROM pg_catalog.jsonb_each($5) e"
					" WHERE e.key = ANY ($6) AND e.value <> 'null'::jsonb"
					" AND ($7 -> e.key) IS DISTINCT FROM e.value",
					7, types, values, nulls, false, 0);
	if (SPI_processed > 0)
		u->ctx->journaled = true;
}

/* ------------------------------------------------------------ hlc */

/* Lock (creating a placeholder) the row's HLC map; returns it. */
static Jsonb *
row_hlc_lock(KzPushTable *tab, const char *pk)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	bool		isnull;

	values[0] = CStringGetTextDatum(tab->conf->table_name);
	values[1] = CStringGetTextDatum(pk);
	kz_spi_as_owner("INSERT INTO kizunasync.row_hlc (table_name, pk) VALUES ($1, $2)"
					" ON CONFLICT DO NOTHING", 2, types, values, NULL, false, 0);
	kz_spi_as_owner("SELECT column_hlc FROM kizunasync.row_hlc"
					" WHERE table_name = $1 AND pk = $2 FOR UPDATE",
					2, types, values, NULL, false, 1);
	if (SPI_processed == 0)
		return NULL;
	return DatumGetJsonbPCopy(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											&isnull));
}

static void
row_hlc_merge(KzPushTable *tab, const char *pk, const char **names, int n, const char *h)
{
	JsonbParseState *st = NULL;
	JsonbValue	k,
				v;
	JsonbValue *res;
	Oid			types[3] = {TEXTOID, TEXTOID, JSONBOID};
	Datum		values[3];
	int			i;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	for (i = 0; i < n; i++)
	{
		k.type = jbvString;
		k.val.string.val = (char *) names[i];
		k.val.string.len = strlen(names[i]);
		pushJsonbValue(&st, WJB_KEY, &k);
		v.type = jbvString;
		v.val.string.val = (char *) h;
		v.val.string.len = strlen(h);
		pushJsonbValue(&st, WJB_VALUE, &v);
	}
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	values[0] = CStringGetTextDatum(tab->conf->table_name);
	values[1] = CStringGetTextDatum(pk);
	values[2] = JsonbPGetDatum(JsonbValueToJsonb(res));
	/* every winner's clock is greater than the stored one: || never regresses */
	kz_spi_as_owner("UPDATE kizunasync.row_hlc SET column_hlc = column_hlc || $3"
					" WHERE table_name = $1 AND pk = $2", 3, types, values, NULL, false, 0);
}

/* The incoming clock, clamped to now + skew. */
static char *
clamped_hlc(const char *hlc, int skew_ms)
{
	KzHlc		h;
	char		ceiling[32];
	char	   *out;
	int64		now_ms;

	if (!kz_hlc_split(hlc, &h))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kizunasync.push(): hlc \"%s\" is malformed", hlc)));
	now_ms = GetCurrentTimestamp() / 1000 +
		(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
	kz_hlc_format_iso(now_ms + skew_ms, ceiling);
	out = palloc(strlen(hlc) + 64);
	if (!kz_hlc_clamp(&h, ceiling, out, strlen(hlc) + 64))
		strcpy(out, hlc);
	return out;
}

/*
 * HLC resolution of the mutation's columns.  Returns NULL when some column
 * won and was written, else the rejection reason (the unit rolls back).
 */
static const char *
apply_hlc(UnitState *u, KzVerdict *v)
{
	KzMutationCtx *ctx = u->ctx;
	KzMutationReq *m = ctx->req;
	KzPushTable *tab = ctx->tab;
	char	   *h = clamped_hlc(m->hlc, ctx->hlc_skew_ms);
	KzHlc		hin;
	Jsonb	   *stored = row_hlc_lock(tab, m->pk);
	const char **winners = palloc(sizeof(char *) * (m->ncolumns + 1));
	int			nwin = 0;
	int			i;
	Jsonb	   *prior;

	kz_hlc_split(h, &hin);
	for (i = 0; i < m->ncolumns; i++)
	{
		Jsonb	   *s = kz_jsonb_get(stored, m->columns[i]);
		JsonbValue	sv;
		bool		wins = true;

		if (s != NULL && jsonb_scalar(s, &sv) && sv.type == jbvString)
		{
			KzHlc		hs;
			char	   *st = pnstrdup(sv.val.string.val, sv.val.string.len);

			/* a stored clock that does not split loses to any wire clock */
			if (kz_hlc_split(st, &hs))
				wins = kz_hlc_compare(&hin, &hs) > 0;
		}
		if (wins)
			winners[nwin++] = m->columns[i];
	}
	if (nwin == 0)
	{
		u->row = kz_push_render_row(tab, ctx->keyvals, false);
		return KZ_R_SUPERSEDED;
	}
	prior = kz_push_render_row(tab, ctx->keyvals, false);
	if (m->op == KZ_OP_INSERT)
		apply_upsert(tab, ctx->keyvals, u->columns, winners, nwin);
	else if (apply_update_masked(tab, ctx->keyvals, u->columns, winners, nwin) == 0)
	{
		u->row = prior;
		return KZ_R_RLS_DENIED;
	}
	journal_overwrites(u, winners, nwin, prior);
	row_hlc_merge(tab, m->pk, winners, nwin, h);
	return NULL;
}

/* ------------------------------------------------------------ the unit */

/* Returns NULL (applied; v filled) or a rejection reason (u->row = server_row). */
static const char *
unit_body(UnitState *u, KzVerdict *v)
{
	KzMutationCtx *ctx = u->ctx;
	KzMutationReq *m = ctx->req;
	KzPushTable *tab = ctx->tab;
	bool		has_transforms = m->op == KZ_OP_UPDATE && m->ntransforms > 0;
	bool		columns_done = false;

	/* a. insert key authority */
	if (m->op == KZ_OP_INSERT && !insert_keys_agree(tab, m, ctx->keyvals, u->columns))
		return KZ_R_CONSTRAINT;

	/* b. precondition */
	if (!precondition_holds(tab, m, u->row, u->precondition))
		return KZ_R_PRECONDITION;

	/* c. delete */
	if (m->op == KZ_OP_DELETE)
	{
		char	   *bucket;

		if (apply_delete(tab, m, ctx->keyvals, u->precondition) > 0)
		{
			remember_delete(tab, m->pk);
			return NULL;
		}
		bucket = live_tombstone(tab, m->pk);
		if (bucket != NULL && caller_holds_grant(tab, bucket))
		{
			u->row = NULL;
			return KZ_R_DELETE_WINS;
		}
		u->row = kz_push_render_row(tab, ctx->keyvals, false);
		if (u->row != NULL && !precondition_holds(tab, m, u->row, u->precondition))
			return KZ_R_PRECONDITION;
		return KZ_R_RLS_DENIED;
	}

	/* d. hlc mode */
	if (tab->conf->hlc && m->ncolumns > 0)
	{
		const char *r;

		if (u->locked == NULL)
		{
			if (m->op != KZ_OP_INSERT || row_exists_as_owner(tab, ctx->keyvals))
				return KZ_R_RLS_DENIED;
			/* serialize with a concurrent inserter of this pk, then look again */
			row_hlc_lock(tab, m->pk);
			if (row_exists_as_owner(tab, ctx->keyvals))
			{
				u->locked = kz_push_render_row(tab, ctx->keyvals, true);
				if (u->locked == NULL)
				{
					u->row = NULL;
					return KZ_R_RLS_DENIED;
				}
				u->row = u->locked;
			}
		}
		r = apply_hlc(u, v);
		if (r != NULL && (!has_transforms || strcmp(r, KZ_R_SUPERSEDED) != 0))
			return r;
		columns_done = true;
	}

	if (!columns_done)
	{
		if (m->op == KZ_OP_INSERT)
		{
			apply_upsert(tab, ctx->keyvals, u->columns, m->columns, m->ncolumns);
			journal_overwrites(u, m->columns, m->ncolumns, u->row);
			return NULL;
		}
		else if (m->ncolumns > 0)
		{
			if (apply_update_masked(tab, ctx->keyvals, u->columns, m->columns, m->ncolumns) == 0)
				return KZ_R_RLS_DENIED;
			journal_overwrites(u, m->columns, m->ncolumns, u->row);
		}
		else if (!has_transforms)
			return KZ_R_RLS_DENIED;
	}

	if (has_transforms)
	{
		uint64		n = 0;
		const char *r = kz_push_apply_transforms(ctx, &n);

		if (r != NULL)
			return r;
		if (n == 0)
			return KZ_R_RLS_DENIED;
		v->has_server_row = true;
		v->server_row = kz_push_render_row(tab, ctx->keyvals, false);
	}
	return NULL;
}

/* SQLSTATEs a unit turns into a verdict; anything else fails the push. */
static const char *
classify_error(int sqlerrcode)
{
	if (sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
		return KZ_R_RLS_DENIED;
	if (ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION ||
		ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_DATA_EXCEPTION ||
		sqlerrcode == ERRCODE_RAISE_EXCEPTION ||
		sqlerrcode == ERRCODE_GENERATED_ALWAYS)
		return KZ_R_CONSTRAINT;
	return NULL;
}

/* Run the unit in a subtransaction; a rejection rolls back all its writes. */
static void
run_unit(UnitState *u, KzVerdict *v)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	const char *volatile reason = NULL;
	volatile bool caught = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		reason = unit_body(u, v);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		reason = classify_error(edata->sqlerrcode);
		if (reason == NULL)
			ReThrowError(edata);	/* an error of the call, never a verdict */
		FreeErrorData(edata);
		caught = true;
	}
	PG_END_TRY();

	if (reason == NULL)
		ReleaseCurrentSubTransaction();
	else
	{
		if (!caught)
			RollbackAndReleaseCurrentSubTransaction();
		v->applied = false;
		v->reason = reason;
		v->has_server_row = true;
		v->server_row = strcmp(reason, KZ_R_DELETE_WINS) == 0 ? NULL : u->row;
	}
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

static void
reject(KzVerdict *v, const char *reason, Jsonb *row)
{
	v->applied = false;
	v->reason = reason;
	v->has_server_row = true;
	v->server_row = row;
}

void
kz_push_decide(KzMutationCtx *ctx, KzVerdict *v)
{
	KzMutationReq *m = ctx->req;
	KzPushTable *tab = ctx->tab;
	UnitState	u;
	bool		denied;
	char		here;

	memset(&u, 0, sizeof(u));
	u.ctx = ctx;
	v->applied = true;
	v->has_server_row = false;
	v->server_row = NULL;
	v->reason = NULL;

	u.columns = kz_jsonb_get(ctx->mutation, "columns");
	if (u.columns == NULL || !JB_ROOT_IS_OBJECT(u.columns) || JB_ROOT_IS_SCALAR(u.columns))
		u.columns = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
	if (m->has_precondition)
		u.precondition = kz_jsonb_get(ctx->mutation, "precondition");

	denied = column_write_denied(tab, m);

	if (m->op != KZ_OP_DELETE)
		u.locked = kz_push_render_row(tab, ctx->keyvals, true);

	/* removed-row check, for every op */
	here = deleted_here(tab, m->pk);
	if (here == 'd')
	{
		reject(v, KZ_R_DELETE_WINS, NULL);
		return;
	}
	if (here == '\0')
	{
		char	   *bucket = live_tombstone(tab, m->pk);

		if (bucket != NULL)
		{
			reject(v, caller_holds_grant(tab, bucket) ? KZ_R_DELETE_WINS : KZ_R_RLS_DENIED, NULL);
			return;
		}
	}

	u.row = u.locked ? u.locked : kz_push_render_row(tab, ctx->keyvals, false);
	if (denied)
	{
		reject(v, KZ_R_COLUMN_DENIED, u.row);
		return;
	}

	run_unit(&u, v);
}
