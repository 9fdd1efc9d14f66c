/*-------------------------------------------------------------------------
 *
 * pull_page.c
 *	  The pull response envelopes (pull_page.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"

#include "jsonb_writer.h"
#include "jsonbutil.h"
#include "pull_page.h"

Jsonb *
kz_page_signal(const char *type, const text *cursor)
{
	JsonbParseState *ps = NULL;
	JsonbValue *res;
	char	   *cur = text_to_cstring(cursor);

	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_key(&ps, "rows");
	pushJsonbValue(&ps, WJB_BEGIN_ARRAY, NULL);
	pushJsonbValue(&ps, WJB_END_ARRAY, NULL);
	kz_jsonb_push_kv_string(&ps, "cursor", cur);
	kz_jsonb_push_key(&ps, "signal");
	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_kv_string(&ps, "type", type);
	pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	kz_jsonb_push_kv_bool(&ps, "has_more", false);
	kz_jsonb_push_key(&ps, "tombstones");
	pushJsonbValue(&ps, WJB_BEGIN_ARRAY, NULL);
	pushJsonbValue(&ps, WJB_END_ARRAY, NULL);
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

/* deleted_at as YYYY-MM-DDTHH:MM:SS.mmmZ in UTC (decisions/0023). */
static char *
page_deleted_at(TimestampTz ts)
{
	struct pg_tm tm;
	fsec_t		fsec;

	if (TIMESTAMP_NOT_FINITE(ts) ||
		timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0 ||
		tm.tm_year < 1 || tm.tm_year > 9999)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("tombstone deleted_at is out of range")));
	return psprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
					tm.tm_year, tm.tm_mon, tm.tm_mday,
					tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (fsec / 1000));
}

/*
 * The page, written straight into jsonb's binary form: every rendered row is
 * embedded as it is (decisions/0010 costs).  Key order is jsonb's (shorter
 * keys first): {"rows", "cursor", "signal", "has_more", ["conflicts"],
 * "tombstones"}; a row {"pk", "row", "seq", "table"}; a tombstone
 * {"pk", "seq", "table", "deleted_at"}.
 */
Jsonb *
kz_page_build(const KzPageEntry *rows, int nrows, const KzPageEntry *tombs, int ntombs,
			  const text *cursor, bool has_more, Jsonb *conflicts)
{
	static const char *const page_keys[] = {"rows", "cursor", "signal", "has_more", "tombstones"};
	static const char *const page_keys_c[] = {"rows", "cursor", "signal", "has_more", "conflicts", "tombstones"};
	static const char *const row_keys[] = {"pk", "row", "seq", "table"};
	static const char *const tomb_keys[] = {"pk", "seq", "table", "deleted_at"};
	KzJbWriter	w;
	Size		hint = 256 + VARSIZE_ANY_EXHDR(cursor);
	char		seqbuf[32];
	int			i;

	for (i = 0; i < nrows; i++)
		hint += VARSIZE(rows[i].row) + strlen(rows[i].pk) + 64 +
			strlen(rows[i].table_name);
	for (i = 0; i < ntombs; i++)
		hint += strlen(tombs[i].pk) + 96 + strlen(tombs[i].table_name);
	if (conflicts != NULL)
		hint += VARSIZE(conflicts);
	kz_jbw_init(&w, (int) Min(hint, (Size) MaxAllocSize / 2));

	if (conflicts != NULL)
		kz_jbw_begin_object(&w, 6, page_keys_c);
	else
		kz_jbw_begin_object(&w, 5, page_keys);

	kz_jbw_begin_array(&w, nrows);
	for (i = 0; i < nrows; i++)
	{
		const KzPageEntry *e = &rows[i];
		const char *tn = e->table_name;

		kz_jbw_begin_object(&w, 4, row_keys);
		kz_jbw_string(&w, e->pk, strlen(e->pk));
		kz_jbw_jsonb(&w, e->row);
		kz_jbw_string(&w, seqbuf, snprintf(seqbuf, sizeof(seqbuf), INT64_FORMAT, e->seq));
		kz_jbw_string(&w, tn, strlen(tn));
		kz_jbw_end(&w);
	}
	kz_jbw_end(&w);

	kz_jbw_string(&w, VARDATA_ANY(cursor), VARSIZE_ANY_EXHDR(cursor));
	kz_jbw_null(&w);
	kz_jbw_bool(&w, has_more);
	if (conflicts != NULL)
		kz_jbw_jsonb(&w, conflicts);

	kz_jbw_begin_array(&w, ntombs);
	for (i = 0; i < ntombs; i++)
	{
		const KzPageEntry *e = &tombs[i];
		const char *tn = e->table_name;
		char	   *da = page_deleted_at(e->deleted_at);

		kz_jbw_begin_object(&w, 4, tomb_keys);
		kz_jbw_string(&w, e->pk, strlen(e->pk));
		kz_jbw_string(&w, seqbuf, snprintf(seqbuf, sizeof(seqbuf), INT64_FORMAT, e->seq));
		kz_jbw_string(&w, tn, strlen(tn));
		kz_jbw_string(&w, da, strlen(da));
		kz_jbw_end(&w);
	}
	kz_jbw_end(&w);

	kz_jbw_end(&w);
	return kz_jbw_finish(&w);
}
