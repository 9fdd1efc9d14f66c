/*-------------------------------------------------------------------------
 *
 * release_guard.c
 *	  An fmgr hook that refuses an older release's SQL-language SECURITY
 *	  DEFINER functions in the kizunasync schema (release_guard.h).
 *
 * PostgreSQL sends every call of a SECURITY DEFINER function, and of every
 * function with SET options, through fmgr_security_definer(), which calls
 * fmgr_hook with FHET_START before the function's own handler runs (so
 * before PL/pgSQL compiles its body and resolves its declared types).  The
 * hook costs one syscache lookup per call of such functions; it leaves
 * *private to any earlier hook it chains to (sepgsql keeps its state there).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "fmgr.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "release_guard.h"

static fmgr_hook_type rg_prev_fmgr_hook = NULL;

/*
 * Is fnoid an SQL-language (not C, not internal) SECURITY DEFINER function
 * in schema kizunasync?  Such a function can only be an older release's.
 */
static bool
rg_is_old_definer(Oid fnoid)
{
	HeapTuple	tp;
	Form_pg_proc proc;
	bool		old;
	Oid			nsp;

	tp = SearchSysCache1(PROCOID, ObjectIdGetDatum(fnoid));
	if (!HeapTupleIsValid(tp))
		return false;
	proc = (Form_pg_proc) GETSTRUCT(tp);
	old = proc->prosecdef &&
		proc->prolang != ClanguageId &&
		proc->prolang != INTERNALlanguageId;
	nsp = proc->pronamespace;
	ReleaseSysCache(tp);
	if (!old)
		return false;
	return nsp == get_namespace_oid("kizunasync", true);
}

static void
rg_fmgr_hook(FmgrHookEventType event, FmgrInfo *flinfo, Datum *private)
{
	if (event == FHET_START && rg_is_old_definer(flinfo->fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the SQL objects of extension \"kizunasync\" are older than its library"),
				 errdetail("Function %s is an older release's SECURITY DEFINER function written in SQL or PL/pgSQL.",
						   format_procedure(flinfo->fn_oid)),
				 errhint("Run ALTER EXTENSION kizunasync UPDATE.")));
	if (rg_prev_fmgr_hook)
		rg_prev_fmgr_hook(event, flinfo, private);
}

void
kz_release_guard_init(void)
{
	rg_prev_fmgr_hook = fmgr_hook;
	fmgr_hook = rg_fmgr_hook;
}
