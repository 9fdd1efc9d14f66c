/*-------------------------------------------------------------------------
 *
 * testonly.c
 *	  Entry points for the test suites only.  The production install
 *	  declares none of them: the test-only extension kizunasync_test
 *	  (test/ext/) does, and the harness installs it in test databases.
 *	  The symbols also keep 0.1.0's install script loadable, which declared
 *	  some of them in the extension itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "capture_batch.h"
#include "capture_queue.h"
#include "horizon.h"
#include "rowkey.h"
#include "spi.h"
#include "stamp.h"
#include "tableconf.h"

PG_FUNCTION_INFO_V1(kz_horizon_sql);
PG_FUNCTION_INFO_V1(kz_capture_queue_sql);
PG_FUNCTION_INFO_V1(kz_capture_queued_op_sql);
PG_FUNCTION_INFO_V1(kz_pk_canonical);
PG_FUNCTION_INFO_V1(kz_test_wait_after_draw);
PG_FUNCTION_INFO_V1(kz_test_plan_cache_count);

/*
 * kizunasync_test.horizon(cursor text, max_holes integer DEFAULT 100) RETURNS text
 *
 * The checkpoint token the reference horizon (kz_horizon_compute) gives for
 * an incoming "hw" or "hw~h1.h2" cursor under the statement's snapshot.
 */
Datum
kz_horizon_sql(PG_FUNCTION_ARGS)
{
	char	   *cur = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int			max_holes = PG_GETARG_INT32(1);
	char	   *tilde = strchr(cur, '~');
	int64		in_hw;
	int64	   *in_holes = NULL;
	int			n = 0;
	KzHorizon	h;
	StringInfoData buf;
	int			i;

	if (tilde)
		*tilde = '\0';
	in_hw = DatumGetInt64(DirectFunctionCall1(int8in, CStringGetDatum(cur)));
	if (tilde)
	{
		char	   *p = tilde + 1;
		char	   *tok;

		in_holes = palloc(sizeof(int64) * (strlen(p) / 2 + 1));
		for (tok = strtok(p, "."); tok; tok = strtok(NULL, "."))
			in_holes[n++] = DatumGetInt64(DirectFunctionCall1(int8in, CStringGetDatum(tok)));
	}

	kz_horizon_compute(in_hw, in_holes, n, GetActiveSnapshot(), max_holes, &h);

	initStringInfo(&buf);
	appendStringInfo(&buf, INT64_FORMAT, h.high_water);
	for (i = 0; i < h.nholes; i++)
		appendStringInfo(&buf, "%c" INT64_FORMAT, i == 0 ? '~' : '.', h.holes[i]);
	PG_RETURN_TEXT_P(cstring_to_text(buf.data));
}

/*
 * kizunasync_test.capture_queue(action text) RETURNS text: drive the push
 * queue from SQL ('begin', 'flush', 'discard', 'end'); returns the number of
 * changes still queued.
 */
Datum
kz_capture_queue_sql(PG_FUNCTION_ARGS)
{
	char	   *action = text_to_cstring(PG_GETARG_TEXT_PP(0));

	if (strcmp(action, "begin") == 0)
	{
		kz_capture_batch_flush();	/* the queue takes changes directly: none may be pending */
		kz_capture_queue_begin();
	}
	else if (strcmp(action, "flush") == 0)
		kz_capture_queue_flush();
	else if (strcmp(action, "discard") == 0)
		kz_capture_queue_discard();
	else if (strcmp(action, "end") == 0)
		kz_capture_queue_end();
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown queue action \"%s\"", action)));
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("%d", kz_capture_queue_length())));
}

/* kizunasync_test.capture_queued_op(table_name text, pk text) RETURNS text */
Datum
kz_capture_queued_op_sql(PG_FUNCTION_ARGS)
{
	char		op = kz_capture_queued_op(text_to_cstring(PG_GETARG_TEXT_PP(0)),
										  text_to_cstring(PG_GETARG_TEXT_PP(1)));

	if (op == '\0')
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text_with_len(&op, 1));
}

/* kizunasync_test.pk_canonical(tbl regclass, pk text) RETURNS boolean */
Datum
kz_pk_canonical(PG_FUNCTION_ARGS)
{
	KzTableConf *conf = kz_tableconf_by_relid(PG_GETARG_OID(0), false);
	char	   *pk = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Datum	   *values = palloc(sizeof(Datum) * conf->nkeys);

	PG_RETURN_BOOL(kz_rowkey_parse(conf, pk, values));
}

/*
 * kizunasync_test.wait_after_draw(key bigint) RETURNS void: from now on in
 * this session, a writer that has drawn a seq waits inside the fence for a
 * shared advisory lock on key (0 turns it off).
 */
Datum
kz_test_wait_after_draw(PG_FUNCTION_ARGS)
{
	kz_stamp_set_wait_after_draw(PG_GETARG_INT64(0));
	PG_RETURN_VOID();
}

/* kizunasync_test.plan_cache_count() RETURNS integer */
Datum
kz_test_plan_cache_count(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(kz_plan_cache_count());
}
