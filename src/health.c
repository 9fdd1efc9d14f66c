/*-------------------------------------------------------------------------
 *
 * health.c
 *	  kizunasync.health() RETURNS TABLE (name text, status text, detail
 *	  text, fix text): one row per check of the deployment (issue 31,
 *	  README "Monitoring"), each "ok", "warning" or "error" with a sentence
 *	  saying what was found and, unless ok, what to do.
 *
 *	  For the database owner and service_role (EXECUTE granted), SECURITY
 *	  INVOKER.  It reads the bookkeeping only through the monitoring views
 *	  (sql/src/56_monitoring.sql) and kizunasync.in_flight, as the caller,
 *	  who may read them anyway, and pg_catalog as the caller; every name in
 *	  those statements is qualified, so nothing of the caller's search_path
 *	  or temporary schema is found that the caller would not find typing
 *	  the same query.  The only privileged reads are the effective settings
 *	  (settings.c) and pg_cron's job table (as the extension owner, only
 *	  when schema cron and extension pg_cron belong to a superuser, since
 *	  pg_cron's row security would hide jobs another role scheduled).
 *
 *	  health() is not an entry point that others' code may not nest in:
 *	  it keeps no per-call state, and the views' functions it reaches
 *	  (kizunasync._in_flight, kizunasync._settings) are guarded themselves.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "capture_batch.h"
#include "identity.h"
#include "settings.h"
#include "spi.h"

PG_FUNCTION_INFO_V1(kz_health);

#define HEALTH_FNAME	"kizunasync.health()"

/* Tombstones this much past their TTL mean the reap is not keeping up. */
#define HEALTH_REAP_SLACK_DAYS		1
/* A retention job not run for this long is not scheduled. */
#define HEALTH_JOB_STALE_DAYS		2
/* Dead rows that VACUUM should have removed: more than this many ... */
#define HEALTH_BLOAT_MIN_DEAD		1000
/* ... and more than this share of the live rows. */
#define HEALTH_BLOAT_DEAD_SHARE		0.5
/* Names listed in one sentence at most. */
#define HEALTH_MAX_LISTED			5

static const char *const retention_jobs[3] = {
	"kizunasync-reap-tombstones", "kizunasync-compact-changelog", "kizunasync-prune-clients"
};

static void
health_row(ReturnSetInfo *rsinfo, const char *name, const char *status,
		   const char *detail, const char *fix)
{
	Datum		values[4];
	bool		nulls[4] = {false, false, false, fix == NULL};

	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(status);
	values[2] = CStringGetTextDatum(detail);
	values[3] = fix ? CStringGetTextDatum(fix) : (Datum) 0;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* Run a read as the caller; returns the row count (rows in SPI_tuptable). */
static uint64
health_read(const char *sql)
{
	return kz_spi_run(sql, 0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
}

/* Column col (1-based) of row i of the last read, as text, or NULL. */
static char *
health_text(uint64 i, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, col);
}

static double
health_num(uint64 i, int col, double if_null)
{
	char	   *v = health_text(i, col);

	return v ? strtod(v, NULL) : if_null;
}

/* "3 h", "2.5 days": an age in seconds for a sentence. */
static char *
health_age(double secs)
{
	if (secs < 120)
		return psprintf("%.1f s", secs);
	if (secs < 7200)
		return psprintf("%.0f min", secs / 60);
	if (secs < 2 * 86400)
		return psprintf("%.1f h", secs / 3600);
	return psprintf("%.1f days", secs / 86400);
}

/* pg_cron's jobs among retention_jobs that are not scheduled here, or NULL without pg_cron. */
static char *
health_cron_missing(bool *have_cron)
{
	Oid			types[1] = {TEXTARRAYOID};
	Datum		values[1];
	Datum		names[3];
	StringInfoData missing;
	uint64		n,
				i;
	int			j;

	*have_cron = OidIsValid(get_extension_oid("pg_cron", true)) &&
		superuser_arg(kz_namespace_owner("cron"));
	if (!*have_cron)
		return NULL;
	for (j = 0; j < 3; j++)
		names[j] = CStringGetTextDatum(retention_jobs[j]);
	values[0] = PointerGetDatum(construct_array(names, 3, TEXTOID, -1, false, TYPALIGN_INT));
	n = kz_spi_priv("SELECT w.job FROM pg_catalog.unnest($1) w (job)"
					" WHERE NOT EXISTS (SELECT 1 FROM cron.job j"
					"   WHERE j.jobname OPERATOR(pg_catalog.=) w.job"
					"     AND j.database OPERATOR(pg_catalog.=) pg_catalog.current_database()"
					"     AND j.active)"
					" ORDER BY 1",
					1, types, values, NULL, true, 0, SPI_OK_SELECT);
	initStringInfo(&missing);
	for (i = 0; i < n; i++)
		appendStringInfo(&missing, "%s%s", i ? ", " : "", health_text(i, 1));
	return missing.data;
}

/* The retention jobs: scheduled by pg_cron here, or run lately some other way. */
static void
health_retention_jobs(ReturnSetInfo *rsinfo)
{
	bool		have_cron;
	char	   *missing = health_cron_missing(&have_cron);
	double		reap_age;
	char	   *ran;

	health_read("SELECT pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()"
				" OPERATOR(pg_catalog.-) r.last_started_at)"
				" FROM kizunasync.retention_metrics r"
				" WHERE r.job OPERATOR(pg_catalog.=) 'reap_tombstones'");
	reap_age = health_num(0, 1, -1);
	ran = reap_age < 0 ? "reap_tombstones() has never run here"
		: psprintf("reap_tombstones() last ran %s ago", health_age(reap_age));
	if (have_cron && missing[0] != '\0')
		health_row(rsinfo, "retention_jobs", "warning",
				   psprintf("pg_cron is installed, but these retention jobs are not scheduled for this database: %s; %s.",
							missing, ran),
				   "Run SELECT kizunasync.schedule_jobs(); as the database owner.");
	else if (have_cron)
		health_row(rsinfo, "retention_jobs", "ok",
				   psprintf("pg_cron runs the three retention jobs here; %s.", ran), NULL);
	else if (reap_age >= 0 && reap_age < HEALTH_JOB_STALE_DAYS * 86400.0)
		health_row(rsinfo, "retention_jobs", "ok",
				   psprintf("pg_cron is not installed in this database, but %s, so something else schedules the retention jobs.",
							ran), NULL);
	else
		health_row(rsinfo, "retention_jobs", "warning",
				   psprintf("pg_cron is not installed in this database and %s: tombstones, stale clients and old verdicts pile up.",
							ran),
				   "Run kizunasync.reap_tombstones(), compact_changelog() and prune_clients() daily as the database owner:"
				   " CREATE EXTENSION pg_cron and SELECT kizunasync.schedule_jobs(), or cron.schedule_in_database() from pg_cron's database, or any scheduler.");
}

/* The oldest tombstone against its table's TTL. */
static void
health_reap_horizon(ReturnSetInfo *rsinfo)
{
	char	   *table;
	double		age,
				ttl_days;
	char	   *horizon;

	health_read("SELECT m.oldest_tombstone_table,"
				" pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) m.oldest_tombstone_at),"
				" m.oldest_tombstone_ttl_days, m.reap_horizon,"
				" pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) m.reap_horizon_raised_at)"
				" FROM kizunasync.metrics m");
	table = health_text(0, 1);
	age = health_num(0, 2, 0);
	ttl_days = health_num(0, 3, 0);
	horizon = health_text(0, 5)
		? psprintf("the reap horizon is seq %s, raised %s ago", health_text(0, 4), health_age(health_num(0, 5, 0)))
		: pstrdup("no reap has raised the reap horizon yet");
	if (table == NULL)
		health_row(rsinfo, "reap_horizon", "ok",
				   psprintf("There is no tombstone; %s.", horizon), NULL);
	else if (age > (ttl_days + HEALTH_REAP_SLACK_DAYS) * 86400.0)
		health_row(rsinfo, "reap_horizon", "warning",
				   psprintf("The oldest tombstone (table %s) is %s old, past its TTL of %.0f days; %s: the reap is not running or not keeping up.",
							quote_identifier(table), health_age(age), ttl_days, horizon),
				   "Run SELECT kizunasync.reap_tombstones(); until it returns 0, and schedule it (see retention_jobs).");
	else
		health_row(rsinfo, "reap_horizon", "ok",
				   psprintf("The oldest tombstone (table %s) is %s old, its TTL %.0f days; %s.",
							quote_identifier(table), health_age(age), ttl_days, horizon), NULL);
}

/* Running transactions holding seqs longer than pull_wait_ms, and prepared ones. */
static void
health_in_flight(ReturnSetInfo *rsinfo, const KzSettings *s)
{
	StringInfoData held;
	uint64		n,
				i;

	n = health_read("SELECT i.pid, i.seqs,"
					" pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) i.since)"
					" FROM kizunasync.in_flight i WHERE i.prepared_gid IS NULL AND i.pid IS NOT NULL"
					" ORDER BY i.since");
	initStringInfo(&held);
	for (i = 0; i < n; i++)
	{
		double		age = health_num(i, 3, 0);

		if (age * 1000.0 <= s->pull_wait_ms)
			continue;
		if (held.len > 0)
			appendStringInfoString(&held, ", ");
		appendStringInfo(&held, "backend %s (%s seqs, for %s)", health_text(i, 1), health_text(i, 2),
						 health_age(age));
	}
	if (held.len == 0)
		health_row(rsinfo, "seqs_in_flight", "ok",
				   psprintf("No running transaction has held seqs in flight for longer than pull_wait_ms (%d ms).",
							s->pull_wait_ms), NULL);
	else
		health_row(rsinfo, "seqs_in_flight", "warning",
				   psprintf("Held in flight for longer than pull_wait_ms (%d ms): %s. Pulls that reach those seqs wait, then stop there until the transaction ends.",
							s->pull_wait_ms, held.data),
				   "End the transaction (commit it, or SELECT pg_terminate_backend(pid)); SELECT * FROM kizunasync.in_flight shows what holds seqs.");

	n = health_read("SELECT i.prepared_gid, i.seqs,"
					" pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) i.since)"
					" FROM kizunasync.in_flight i WHERE i.prepared_gid IS NOT NULL"
					" ORDER BY i.since");
	resetStringInfo(&held);
	for (i = 0; i < n && i < HEALTH_MAX_LISTED; i++)
		appendStringInfo(&held, "%s%s (%s seqs, prepared %s ago)", i ? ", " : "",
						 quote_literal_cstr(health_text(i, 1)), health_text(i, 2),
						 health_age(health_num(i, 3, 0)));
	if (n > HEALTH_MAX_LISTED)
		appendStringInfo(&held, " and %d more", (int) (n - HEALTH_MAX_LISTED));
	if (n == 0)
		health_row(rsinfo, "prepared_transactions", "ok",
				   "No prepared transaction holds seqs in flight.", NULL);
	else
		health_row(rsinfo, "prepared_transactions", "warning",
				   psprintf("Prepared transactions hold seqs in flight: %s. Pulls stop at them until COMMIT PREPARED or ROLLBACK PREPARED.",
							held.data),
				   "Resolve each with COMMIT PREPARED 'gid' or ROLLBACK PREPARED 'gid' (its transaction manager should).");
}

/* Bookkeeping tables with more dead rows than VACUUM should have left. */
static void
health_bloat(ReturnSetInfo *rsinfo)
{
	StringInfoData found;
	uint64		n,
				i;

	n = health_read("SELECT b.relation, b.dead_tuples, b.live_tuples, COALESCE(b.last_vacuum::pg_catalog.text, 'never')"
					" FROM kizunasync.bookkeeping_metrics b"
					" WHERE b.dead_tuples OPERATOR(pg_catalog.>) " CppAsString2(HEALTH_BLOAT_MIN_DEAD)
					"   AND b.dead_tuples OPERATOR(pg_catalog.>) (b.live_tuples OPERATOR(pg_catalog.*) "
					CppAsString2(HEALTH_BLOAT_DEAD_SHARE) ")"
					" ORDER BY b.dead_tuples DESC, b.relation");
	initStringInfo(&found);
	for (i = 0; i < n && i < HEALTH_MAX_LISTED; i++)
		appendStringInfo(&found, "%skizunasync.%s (%s dead rows, %s live, last vacuumed %s)", i ? ", " : "",
						 health_text(i, 1), health_text(i, 2), health_text(i, 3), health_text(i, 4));
	if (n == 0)
		health_row(rsinfo, "bookkeeping_bloat", "ok",
				   psprintf("No bookkeeping table has more than %d dead rows and more dead rows than half its live ones.",
							HEALTH_BLOAT_MIN_DEAD), NULL);
	else
		health_row(rsinfo, "bookkeeping_bloat", "warning",
				   psprintf("Dead rows that VACUUM has not removed: %s.", found.data),
				   "Run VACUUM (ANALYZE) on each as the database owner; if it comes back, check autovacuum and transactions left open (they keep VACUUM from removing rows).");
}

/* Synced tables without row level security. */
static void
health_rls(ReturnSetInfo *rsinfo)
{
	StringInfoData open,
				closed;
	uint64		n,
				i;

	n = health_read("SELECT t.relation::pg_catalog.text,"
					" pg_catalog.has_table_privilege('authenticated', t.relation::pg_catalog.oid, 'SELECT')"
					" FROM kizunasync.table_metrics t"
					" JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relation::pg_catalog.oid"
					" WHERE NOT c.relrowsecurity ORDER BY 1");
	initStringInfo(&open);
	initStringInfo(&closed);
	for (i = 0; i < n; i++)
	{
		StringInfo	into = strcmp(health_text(i, 2), "t") == 0 ? &open : &closed;

		appendStringInfo(into, "%s%s", into->len ? ", " : "", health_text(i, 1));
	}
	if (open.len > 0)
		health_row(rsinfo, "row_level_security", "error",
				   psprintf("Synced tables without row level security that authenticated may SELECT: %s. Every signed-in user pulls every row of them.",
							open.data),
				   "ALTER TABLE ... ENABLE ROW LEVEL SECURITY, with policies for authenticated (USING (true) where every user may indeed read every row).");
	else if (closed.len > 0)
		health_row(rsinfo, "row_level_security", "warning",
				   psprintf("Synced tables without row level security: %s (authenticated may not SELECT them now: a later GRANT would expose every row).",
							closed.data),
				   "ALTER TABLE ... ENABLE ROW LEVEL SECURITY, with policies for authenticated.");
	else
		health_row(rsinfo, "row_level_security", "ok",
				   "Every synced table has row level security enabled.", NULL);
}

/* How clients hear of changes: Supabase Realtime, NOTIFY, or not at all. */
static void
health_wakeup(ReturnSetInfo *rsinfo)
{
	const char *fallback = GetConfigOption("kizunasync.notify_fallback", true, false);
	bool		notify = fallback != NULL && strcmp(fallback, "on") == 0;
	char	   *owner_super;
	char	   *deaf;

	health_read("SELECT pg_catalog.bool_or(r.rolsuper),"
				" pg_catalog.to_regprocedure('realtime.send(pg_catalog.jsonb, pg_catalog.text, pg_catalog.text, pg_catalog.bool)') IS NOT NULL,"
				" CASE WHEN pg_catalog.to_regprocedure('realtime.send(pg_catalog.jsonb, pg_catalog.text, pg_catalog.text, pg_catalog.bool)') IS NOT NULL THEN"
				"  (SELECT pg_catalog.string_agg(s.relation::pg_catalog.text, ', ' ORDER BY 1)"
				"     FROM kizunasync.table_metrics s"
				"     JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.relation::pg_catalog.oid"
				"    WHERE NOT (pg_catalog.has_schema_privilege(c.relowner, 'realtime', 'USAGE')"
				"      AND pg_catalog.has_function_privilege(c.relowner,"
				"           'realtime.send(pg_catalog.jsonb, pg_catalog.text, pg_catalog.text, pg_catalog.bool)', 'EXECUTE'))) END"
				" FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner"
				" WHERE n.nspname OPERATOR(pg_catalog.=) 'realtime'");
	owner_super = health_text(0, 1);
	deaf = health_text(0, 3);
	if (owner_super != NULL && strcmp(owner_super, "f") == 0)
		health_row(rsinfo, "wakeup_hints", "warning",
				   psprintf("Schema realtime is not owned by a superuser, so no hint goes through it; NOTIFY hints (kizunasync.notify_fallback) are %s.",
							notify ? "on" : "off"),
				   "If this is Supabase Realtime, give schema realtime back to its superuser; otherwise drop it.");
	else if (owner_super != NULL && strcmp(health_text(0, 2), "t") == 0 && deaf != NULL)
		health_row(rsinfo, "wakeup_hints", "warning",
				   psprintf("Supabase Realtime is installed, but the owners of these synced tables may not call realtime.send, so their changes send no hint: %s.",
							deaf),
				   "GRANT USAGE ON SCHEMA realtime and EXECUTE ON FUNCTION realtime.send(jsonb, text, text, boolean) to each table's owner.");
	else if (owner_super != NULL && strcmp(health_text(0, 2), "t") == 0)
		health_row(rsinfo, "wakeup_hints", "ok",
				   "Wake-up hints go out as Supabase Realtime broadcasts.", NULL);
	else if (notify)
		health_row(rsinfo, "wakeup_hints", "ok",
				   "Supabase Realtime is not installed; wake-up hints go out as NOTIFY (kizunasync.notify_fallback is on).", NULL);
	else
		health_row(rsinfo, "wakeup_hints", "warning",
				   "Supabase Realtime is not installed and kizunasync.notify_fallback is off: clients hear of changes only when they poll.",
				   "Install Supabase Realtime, or as a superuser ALTER DATABASE ... SET kizunasync.notify_fallback = on and have clients LISTEN.");
}

/* This database's SQL objects against the installed files. */
static void
health_version(ReturnSetInfo *rsinfo)
{
	char	   *version,
			   *installed,
			   *unsafe;

	health_read("SELECT e.extversion, a.default_version,"
				" (SELECT pg_catalog.string_agg(p.oid::pg_catalog.regprocedure::pg_catalog.text, ', ' ORDER BY 1)"
				"    FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang"
				"   WHERE p.pronamespace OPERATOR(pg_catalog.=) e.extnamespace"
				"     AND (p.prosecdef OR l.lanname OPERATOR(pg_catalog.<>) ALL ('{c,internal}'::pg_catalog.name[])))"
				" FROM pg_catalog.pg_extension e"
				" JOIN pg_catalog.pg_available_extensions a ON a.name OPERATOR(pg_catalog.=) e.extname"
				" WHERE e.extname OPERATOR(pg_catalog.=) 'kizunasync'");
	version = health_text(0, 1);
	installed = health_text(0, 2);
	unsafe = health_text(0, 3);
	if (unsafe != NULL)
		health_row(rsinfo, "extension_version", "error",
				   psprintf("Schema kizunasync holds SQL-language or SECURITY DEFINER functions, which no release since 0.2.0 has: %s.",
							unsafe),
				   "Find out who made them and drop them; a superuser's ALTER EXTENSION kizunasync UPDATE replaces the extension's own.");
	else if (version == NULL || installed == NULL || strcmp(version, installed) != 0)
		health_row(rsinfo, "extension_version", "warning",
				   psprintf("This database's SQL objects are version %s; the installed files are version %s.",
							version ? version : "unknown", installed ? installed : "unknown"),
				   "Run ALTER EXTENSION kizunasync UPDATE; in this database (release notes first).");
	else
		health_row(rsinfo, "extension_version", "ok",
				   psprintf("Version %s, as installed; no SQL-language or SECURITY DEFINER function in schema kizunasync."
							" (A database still at 0.1.0 has no health(): check SELECT extversion FROM pg_extension in each database,"
							" and harden and update those.)", version), NULL);
}

/* The write-time budget that max_connections leaves a transaction. */
static void
health_write_budget(ReturnSetInfo *rsinfo)
{
	int			budget = kz_capture_batch_write_time_budget();

	if (budget <= 1)
		health_row(rsinfo, "write_time_budget", "warning",
				   psprintf("A transaction numbers at most %d change%s while it runs (max_connections %d, max_prepared_transactions %d, kizunasync.write_time_changes %s);"
							" the rest are numbered at its commit, which costs a bulk write more and holds its seqs in flight while it commits.",
							budget, budget == 1 ? "" : "s", MaxConnections, max_prepared_xacts,
							GetConfigOption("kizunasync.write_time_changes", true, false)),
				   "Lower max_connections (a pooler needs few connections), or as a superuser set kizunasync.write_time_changes (and kizunasync.prepared_changes).");
	else
		health_row(rsinfo, "write_time_budget", "ok",
				   psprintf("A transaction numbers up to %d changes while it runs, the rest at its commit.", budget),
				   NULL);
}

static Datum
health_body(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KzCaller	caller;
	KzSettings	s;

	kz_entry_reader(fcinfo, HEALTH_FNAME, true, &caller);
	InitMaterializedSRF(fcinfo, 0);
	kz_spi_connect();
	kz_settings_read(&s);
	health_retention_jobs(rsinfo);
	health_reap_horizon(rsinfo);
	health_in_flight(rsinfo, &s);
	health_bloat(rsinfo);
	health_rls(rsinfo);
	health_wakeup(rsinfo);
	health_version(rsinfo);
	health_write_budget(rsinfo);
	kz_spi_finish();
	return (Datum) 0;
}

Datum
kz_health(PG_FUNCTION_ARGS)
{
	return health_body(fcinfo);
}
