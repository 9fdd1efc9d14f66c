/*-------------------------------------------------------------------------
 *
 * legacy.c
 *	  C symbols that an older release's install script names and this
 *	  library no longer serves (decisions/0080: every symbol a release
 *	  script names keeps existing, so that script still loads).  Each
 *	  refuses: the database's SQL objects are older than the library.
 *
 *	  0.1.0 declared in the extension itself a few helpers that are
 *	  test-only since 0.2.0 (they live in the test extension's own library,
 *	  test/ext/kizunasync_test.c) or part of sync_table (_seed).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

PG_FUNCTION_INFO_V1(kz_horizon_sql);
PG_FUNCTION_INFO_V1(kz_capture_queue_sql);
PG_FUNCTION_INFO_V1(kz_capture_queued_op_sql);
PG_FUNCTION_INFO_V1(kz_pk_canonical);
PG_FUNCTION_INFO_V1(kz_seed);

static void
legacy_refuse(const char *sqlname)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the SQL objects of extension \"kizunasync\" are older than its library"),
			 errdetail("Function %s belongs to an older release.", sqlname),
			 errhint("Run ALTER EXTENSION kizunasync UPDATE.")));
}

/* 0.1.0's kizunasync._horizon(cursor text, max_holes integer) */
Datum
kz_horizon_sql(PG_FUNCTION_ARGS)
{
	legacy_refuse("kizunasync._horizon(text,integer)");
	PG_RETURN_NULL();
}

/* 0.1.0's kizunasync._capture_queue(action text) */
Datum
kz_capture_queue_sql(PG_FUNCTION_ARGS)
{
	legacy_refuse("kizunasync._capture_queue(text)");
	PG_RETURN_NULL();
}

/* 0.1.0's kizunasync._capture_queued_op(table_name text, pk text) */
Datum
kz_capture_queued_op_sql(PG_FUNCTION_ARGS)
{
	legacy_refuse("kizunasync._capture_queued_op(text,text)");
	PG_RETURN_NULL();
}

/* 0.1.0's kizunasync._pk_canonical(tbl regclass, pk text) */
Datum
kz_pk_canonical(PG_FUNCTION_ARGS)
{
	legacy_refuse("kizunasync._pk_canonical(regclass,text)");
	PG_RETURN_NULL();
}

/* 0.1.0's kizunasync._seed(tbl regclass), called by its PL/pgSQL sync_table */
Datum
kz_seed(PG_FUNCTION_ARGS)
{
	legacy_refuse("kizunasync._seed(regclass)");
	PG_RETURN_NULL();
}
