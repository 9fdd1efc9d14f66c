/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  Effective deployment settings, and kizunasync.configure().
 *
 *	  kizunasync.settings has no row after CREATE EXTENSION, so that a dump
 *	  carries only what an operator set and restores without a conflict with
 *	  the row a fresh install would have made (decisions/0081).  A NULL or
 *	  absent value takes the default below; CHECK constraints on the table
 *	  give the valid ranges.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "identity.h"
#include "jsonbutil.h"
#include "settings.h"
#include "spi.h"

PG_FUNCTION_INFO_V1(kz_configure);
PG_FUNCTION_INFO_V1(kz_settings_effective);

typedef enum KzSettingKind
{
	KZ_SET_INT,
	KZ_SET_BOOL,
	KZ_SET_TEXT
} KzSettingKind;

typedef struct KzSettingDef
{
	const char *name;
	KzSettingKind kind;
	const char *default_text;	/* as SQL literal text */
	size_t		offset;			/* in KzSettings */
} KzSettingDef;

/*
 * The settings, in the order of configure()'s arguments.  Defaults are
 * defined here and nowhere else.
 */
static const KzSettingDef setting_defs[] = {
	{"max_pull_scan", KZ_SET_INT, "5000", offsetof(KzSettings, max_pull_scan)},
	{"max_pull_limit", KZ_SET_INT, "5000", offsetof(KzSettings, max_pull_limit)},
	{"max_batch_size", KZ_SET_INT, "500", offsetof(KzSettings, max_batch_size)},
	{"require_atomic", KZ_SET_BOOL, "false", offsetof(KzSettings, require_atomic)},
	{"tombstone_ttl_days", KZ_SET_INT, "30", offsetof(KzSettings, tombstone_ttl_days)},
	{"client_ttl_days", KZ_SET_INT, "90", offsetof(KzSettings, client_ttl_days)},
	{"hlc_max_skew_ms", KZ_SET_INT, "5000", offsetof(KzSettings, hlc_max_skew_ms)},
	{"pull_wait_ms", KZ_SET_INT, "2000", offsetof(KzSettings, pull_wait_ms)},
	{"reap_schedule", KZ_SET_TEXT, "16 3 * * *", offsetof(KzSettings, reap_schedule)},
	{"compact_schedule", KZ_SET_TEXT, "47 3 * * *", offsetof(KzSettings, compact_schedule)},
	{"client_prune_schedule", KZ_SET_TEXT, "31 3 * * *", offsetof(KzSettings, client_prune_schedule)},
	{"max_pull_buckets", KZ_SET_INT, "1000", offsetof(KzSettings, max_pull_buckets)},
};

#define KZ_NSETTINGS	lengthof(setting_defs)

static void
settings_assign(KzSettings *s, const KzSettingDef *d, const char *text)
{
	char	   *field = (char *) s + d->offset;

	switch (d->kind)
	{
		case KZ_SET_INT:
			*(int *) field = pg_strtoint32(text);
			break;
		case KZ_SET_BOOL:
			*(bool *) field = (strcmp(text, "true") == 0 || strcmp(text, "t") == 0);
			break;
		case KZ_SET_TEXT:
			*(char **) field = pstrdup(text);
			break;
	}
}

/* "SELECT c1::text, c2::text, ... FROM kizunasync.settings WHERE id" */
static char *
settings_select_sql(void)
{
	StringInfoData sql;
	int			i;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (i = 0; i < (int) KZ_NSETTINGS; i++)
		appendStringInfo(&sql, "%ss.%s::pg_catalog.text", i ? ", " : "", setting_defs[i].name);
	appendStringInfoString(&sql, " FROM kizunasync.settings s WHERE s.id");
	return sql.data;
}

void
kz_settings_read(KzSettings *s)
{
	uint64		n;
	int			i;

	n = kz_spi_priv(settings_select_sql(), 0, NULL, NULL, NULL, false, 1, SPI_OK_SELECT);
	for (i = 0; i < (int) KZ_NSETTINGS; i++)
	{
		char	   *v = n > 0 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1) : NULL;

		settings_assign(s, &setting_defs[i], v ? v : setting_defs[i].default_text);
	}
	SPI_freetuptable(SPI_tuptable);
}

/* The effective settings s as jsonb, in the upper executor context (inside SPI). */
static Jsonb *
settings_jsonb(const KzSettings *s)
{
	JsonbParseState *ps = NULL;
	JsonbValue *res;
	int			i;

	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	for (i = 0; i < (int) KZ_NSETTINGS; i++)
	{
		const KzSettingDef *d = &setting_defs[i];
		char	   *field = (char *) s + d->offset;
		JsonbValue	v;

		kz_jsonb_push_key(&ps, d->name);
		switch (d->kind)
		{
			case KZ_SET_INT:
				v.type = jbvNumeric;
				v.val.numeric = int64_to_numeric(*(int *) field);
				break;
			case KZ_SET_BOOL:
				v.type = jbvBool;
				v.val.boolean = *(bool *) field;
				break;
			case KZ_SET_TEXT:
				v.type = jbvString;
				v.val.string.val = *(char **) field;
				v.val.string.len = strlen(*(char **) field);
				break;
		}
		pushJsonbValue(&ps, WJB_VALUE, &v);
	}
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	return (Jsonb *) SPI_datumTransfer(JsonbPGetDatum(JsonbValueToJsonb(res)), false, -1);
}

/*
 * kizunasync.configure(max_pull_scan integer DEFAULT NULL, ...) RETURNS jsonb
 *
 * Sets the named settings (NULL leaves one unchanged) and returns every
 * effective setting.  Granted to the database owner; the table's CHECK
 * constraints refuse out-of-range values (23514).
 */
static Datum settings_configure_body(FunctionCallInfo fcinfo);

Datum
kz_configure(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.configure()", settings_configure_body);
}

static Datum
settings_configure_body(FunctionCallInfo fcinfo)
{
	KzCaller	caller;
	StringInfoData set;
	Oid		   *types = palloc(sizeof(Oid) * KZ_NSETTINGS);
	Datum	   *values = palloc(sizeof(Datum) * KZ_NSETTINGS);
	int			nargs = 0;
	int			i;
	KzSettings	s;
	Jsonb	   *result;

	kz_entry(fcinfo, "kizunasync.configure()", true, &caller);
	if (PG_NARGS() != (int) KZ_NSETTINGS)
		elog(ERROR, "function %s is declared with %d arguments, not %d",
			 "kizunasync.configure()", PG_NARGS(), (int) KZ_NSETTINGS);

	initStringInfo(&set);
	for (i = 0; i < (int) KZ_NSETTINGS; i++)
	{
		const KzSettingDef *d = &setting_defs[i];

		if (PG_ARGISNULL(i))
			continue;
		types[nargs] = d->kind == KZ_SET_INT ? INT4OID : d->kind == KZ_SET_BOOL ? BOOLOID : TEXTOID;
		values[nargs] = PG_GETARG_DATUM(i);
		nargs++;
		appendStringInfo(&set, "%s%s = $%d", set.len ? ", " : "", d->name, nargs);
	}

	kz_spi_connect();
	if (nargs > 0)
	{
		kz_spi_priv("INSERT INTO kizunasync.settings (id) VALUES (true) ON CONFLICT (id) DO NOTHING",
					0, NULL, NULL, NULL, false, 0, SPI_OK_INSERT);
		kz_spi_priv(psprintf("UPDATE kizunasync.settings SET %s WHERE id", set.data),
					nargs, types, values, NULL, false, 0, SPI_OK_UPDATE);
	}
	kz_settings_read(&s);
	result = settings_jsonb(&s);
	kz_spi_finish();
	PG_RETURN_JSONB_P(result);
}

/*
 * kizunasync._settings() RETURNS jsonb
 *
 * The effective settings, as configure() returns them, changing nothing:
 * for the monitoring views (issue 31), which read them as their reader
 * (EXECUTE granted with the views' SELECT).  Settings are no secret.
 */
static Datum
settings_effective_body(FunctionCallInfo fcinfo)
{
	KzCaller	caller;
	KzSettings	s;
	Jsonb	   *result;

	kz_entry_reader(fcinfo, "kizunasync._settings()", true, &caller);
	kz_spi_connect();
	kz_settings_read(&s);
	result = settings_jsonb(&s);
	kz_spi_finish();
	PG_RETURN_JSONB_P(result);
}

Datum
kz_settings_effective(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync._settings()", settings_effective_body);
}
