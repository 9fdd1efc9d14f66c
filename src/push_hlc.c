/*-------------------------------------------------------------------------
 *
 * push_hlc.c
 *	  HLC conflict mode of push (push_hlc.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "errors.h"
#include "hlc.h"
#include "journal.h"
#include "jsonbutil.h"
#include "push_hlc.h"
#include "push_write.h"
#include "render.h"
#include "spi.h"
#include "verdict.h"

void
kz_push_hlc_lock(KzTableDesc *t, const char *pk)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(t->conf->table_name);
	values[1] = CStringGetTextDatum(pk);
	kz_spi_priv("INSERT INTO kizunasync.row_hlc (table_name, pk) VALUES ($1, $2)"
				" ON CONFLICT DO NOTHING", 2, types, values, NULL, false, 0, SPI_OK_INSERT);
}

/* Lock (creating a placeholder) the row's HLC map; returns it. */
static Jsonb *
hlc_row_lock(KzTableDesc *t, const char *pk)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	bool		isnull;
	Jsonb	   *map = NULL;

	kz_push_hlc_lock(t, pk);
	values[0] = CStringGetTextDatum(t->conf->table_name);
	values[1] = CStringGetTextDatum(pk);
	if (kz_spi_priv("SELECT column_hlc FROM kizunasync.row_hlc"
					" WHERE table_name OPERATOR(pg_catalog.=) $1 AND pk OPERATOR(pg_catalog.=) $2"
					" FOR UPDATE", 2, types, values, NULL, false, 1, SPI_OK_SELECT) > 0)
		map = DatumGetJsonbPCopy(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											   &isnull));
	SPI_freetuptable(SPI_tuptable);
	return map;
}

static void
hlc_row_merge(KzTableDesc *t, const char *pk, const char **names, int n, const char *h)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;
	Oid			types[3] = {TEXTOID, TEXTOID, JSONBOID};
	Datum		values[3];
	int			i;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	for (i = 0; i < n; i++)
		kz_jsonb_push_kv_string(&st, names[i], h);
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	values[0] = CStringGetTextDatum(t->conf->table_name);
	values[1] = CStringGetTextDatum(pk);
	values[2] = JsonbPGetDatum(JsonbValueToJsonb(res));
	/* every winner's clock is greater than the stored one: || never regresses */
	kz_spi_priv("UPDATE kizunasync.row_hlc SET column_hlc = column_hlc OPERATOR(pg_catalog.||) $3"
				" WHERE table_name OPERATOR(pg_catalog.=) $1 AND pk OPERATOR(pg_catalog.=) $2",
				3, types, values, NULL, false, 0, SPI_OK_UPDATE);
}

/* The incoming clock, clamped to now + skew. */
static char *
hlc_clamped(const char *hlc, int skew_ms)
{
	KzHlc		h;
	char		ceiling[32];
	char	   *out;
	int64		now_ms;

	if (!kz_hlc_split(hlc, &h))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hlc %s is malformed", kz_quote_for_message(hlc, strlen(hlc), false))));
	now_ms = GetCurrentTimestamp() / 1000 +
		(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
	kz_hlc_format_iso(now_ms + skew_ms, ceiling);
	out = palloc(strlen(hlc) + 64);
	if (!kz_hlc_clamp(&h, ceiling, out, strlen(hlc) + 64))
		strcpy(out, hlc);
	return out;
}

/* Does the mutation's clock beat the stored clock of column? */
static bool
hlc_column_wins(Jsonb *stored, const char *column, const KzHlc *hin)
{
	Jsonb	   *s = kz_jsonb_get(stored, column);
	JsonbValue	sv;
	KzHlc		hs;
	char	   *text;

	if (s == NULL || !JsonbExtractScalar(&s->root, &sv) || sv.type != jbvString)
		return true;
	text = pnstrdup(sv.val.string.val, sv.val.string.len);
	/* a stored clock that does not split loses to any wire clock */
	return !kz_hlc_split(text, &hs) || kz_hlc_compare(hin, &hs) > 0;
}

const char *
kz_push_hlc_apply(KzTableDesc *t, const KzMutationReq *m, Datum *keyvals, Jsonb *columns,
				  int skew_ms, Jsonb **row, bool *journaled)
{
	char	   *h = hlc_clamped(m->hlc, skew_ms);
	KzHlc		hin;
	Jsonb	   *stored = hlc_row_lock(t, m->pk);
	const char **winners = palloc(sizeof(char *) * (m->ncolumns + 1));
	const char **journal_cols = palloc(sizeof(char *) * (m->ncolumns + 1));
	int			nwin = 0;
	int			njournal = 0;
	int			i;
	Jsonb	   *prior;

	kz_hlc_split(h, &hin);
	for (i = 0; i < m->ncolumns; i++)
		if (hlc_column_wins(stored, m->columns[i], &hin))
			winners[nwin++] = m->columns[i];
	if (nwin == 0)
	{
		*row = kz_render_row(t, keyvals, false);
		return KZ_R_SUPERSEDED;
	}
	prior = kz_render_row(t, keyvals, false);
	if (m->op == KZ_OP_INSERT)
		kz_push_upsert(t, keyvals, columns, winners, nwin);
	else if (kz_push_update(t, keyvals, columns, winners, nwin) == 0)
	{
		*row = prior;
		return KZ_R_RLS_DENIED;
	}
	if (t->conf->conflict_journal && prior != NULL)
	{
		for (i = 0; i < nwin; i++)
			if (!kz_tabledesc_column(t, winners[i])->is_key)
				journal_cols[njournal++] = winners[i];
		if (njournal > 0 &&
			kz_journal_record(t->conf->table_name, m->pk, m->mutation_id, "hlc",
							  journal_cols, njournal, prior, kz_render_row(t, keyvals, false)))
			*journaled = true;
	}
	hlc_row_merge(t, m->pk, winners, nwin, h);
	return NULL;
}
