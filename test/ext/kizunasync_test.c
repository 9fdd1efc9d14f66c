/*-------------------------------------------------------------------------
 *
 * kizunasync_test.c
 *	  The library of the test-only extension kizunasync_test (test/ext/):
 *	  entry points for the test suites only.  Built and installed by
 *	  `make install-test`, never by `make install`: the production library
 *	  has none of them (issue 23 item 12).
 *
 * It reaches kizunasync's internals through load_external_function() in
 * _PG_init, which loads $libdir/kizunasync first if this backend has not,
 * so nothing here links against it and either library may be loaded first.
 * The declarations come from kizunasync's own headers (src/), used for their
 * types only.
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
#include "entry.h"
#include "horizon.h"
#include "siphash.h"
#include "rowkey.h"
#include "spi.h"
#include "stamp.h"
#include "tableconf.h"

PG_MODULE_MAGIC;

/*
 * kizunasync's functions, resolved in _PG_init.  Each is declared PGDLLEXPORT
 * in its header: PostgreSQL 16 and later build modules with
 * -fvisibility=hidden, and load_external_function finds only exported symbols.
 */
#define KZT_FN(name) static __typeof__(name) *kzt_##name
KZT_FN(kz_horizon_compute);
KZT_FN(kz_capture_batch_flush);
KZT_FN(kz_capture_queue_begin);
KZT_FN(kz_capture_queue_flush);
KZT_FN(kz_capture_queue_discard);
KZT_FN(kz_capture_queue_end);
KZT_FN(kz_capture_queue_length);
KZT_FN(kz_capture_queued_op);
KZT_FN(kz_tableconf_by_relid);
KZT_FN(kz_rowkey_parse);
KZT_FN(kz_stamp_set_wait_after_draw);
KZT_FN(kz_plan_cache_count);
KZT_FN(kz_entry_key);
KZT_FN(kz_entry_bucket_number);
KZT_FN(kz_siphash24);

#define KZT_LOAD(name) \
	(kzt_##name = (__typeof__(name) *) \
	 load_external_function("$libdir/kizunasync", #name, true, NULL))

void		_PG_init(void);

void
_PG_init(void)
{
	KZT_LOAD(kz_horizon_compute);
	KZT_LOAD(kz_capture_batch_flush);
	KZT_LOAD(kz_capture_queue_begin);
	KZT_LOAD(kz_capture_queue_flush);
	KZT_LOAD(kz_capture_queue_discard);
	KZT_LOAD(kz_capture_queue_end);
	KZT_LOAD(kz_capture_queue_length);
	KZT_LOAD(kz_capture_queued_op);
	KZT_LOAD(kz_tableconf_by_relid);
	KZT_LOAD(kz_rowkey_parse);
	KZT_LOAD(kz_stamp_set_wait_after_draw);
	KZT_LOAD(kz_plan_cache_count);
	KZT_LOAD(kz_entry_key);
	KZT_LOAD(kz_entry_bucket_number);
	KZT_LOAD(kz_siphash24);
}

PG_FUNCTION_INFO_V1(kzt_horizon);
PG_FUNCTION_INFO_V1(kzt_capture_queue);
PG_FUNCTION_INFO_V1(kzt_capture_queued_op);
PG_FUNCTION_INFO_V1(kzt_pk_canonical);
PG_FUNCTION_INFO_V1(kzt_wait_after_draw);
PG_FUNCTION_INFO_V1(kzt_plan_cache_count);
PG_FUNCTION_INFO_V1(kzt_entry_key);
PG_FUNCTION_INFO_V1(kzt_bucket_number);
PG_FUNCTION_INFO_V1(kzt_siphash);

/*
 * kizunasync_test.horizon(cursor text, max_holes integer DEFAULT 100) RETURNS text
 *
 * The checkpoint token the reference horizon (kz_horizon_compute) gives for
 * an incoming "hw" or "hw~h1.h2" cursor under the statement's snapshot.
 */
Datum
kzt_horizon(PG_FUNCTION_ARGS)
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

	kzt_kz_horizon_compute(in_hw, in_holes, n, GetActiveSnapshot(), max_holes, &h);

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
kzt_capture_queue(PG_FUNCTION_ARGS)
{
	char	   *action = text_to_cstring(PG_GETARG_TEXT_PP(0));

	if (strcmp(action, "begin") == 0)
	{
		kzt_kz_capture_batch_flush();	/* the queue takes changes directly: none may be pending */
		kzt_kz_capture_queue_begin();
	}
	else if (strcmp(action, "flush") == 0)
		kzt_kz_capture_queue_flush();
	else if (strcmp(action, "discard") == 0)
		kzt_kz_capture_queue_discard();
	else if (strcmp(action, "end") == 0)
		kzt_kz_capture_queue_end();
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown queue action \"%s\"", action)));
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("%d", kzt_kz_capture_queue_length())));
}

/* kizunasync_test.capture_queued_op(table_name text, pk text) RETURNS text */
Datum
kzt_capture_queued_op(PG_FUNCTION_ARGS)
{
	char		op = kzt_kz_capture_queued_op(text_to_cstring(PG_GETARG_TEXT_PP(0)),
										  text_to_cstring(PG_GETARG_TEXT_PP(1)));

	if (op == '\0')
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text_with_len(&op, 1));
}

/* kizunasync_test.pk_canonical(tbl regclass, pk text) RETURNS boolean */
Datum
kzt_pk_canonical(PG_FUNCTION_ARGS)
{
	KzTableConf *conf = kzt_kz_tableconf_by_relid(PG_GETARG_OID(0), false);
	char	   *pk = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Datum	   *values = palloc(sizeof(Datum) * conf->nkeys);

	PG_RETURN_BOOL(kzt_kz_rowkey_parse(conf, pk, values));
}

/*
 * kizunasync_test.wait_after_draw(key bigint) RETURNS void: from now on in
 * this session, a writer that has drawn a seq waits inside the fence for a
 * shared advisory lock on key (0 turns it off).
 */
Datum
kzt_wait_after_draw(PG_FUNCTION_ARGS)
{
	kzt_kz_stamp_set_wait_after_draw(PG_GETARG_INT64(0));
	PG_RETURN_VOID();
}

/* kizunasync_test.plan_cache_count() RETURNS integer */
Datum
kzt_plan_cache_count(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(kzt_kz_plan_cache_count());
}

/*
 * The binary key an entry carries for row key text pk (argument 0, the
 * table's wire name, does not matter: the key text alone decides).
 */
Datum
kzt_entry_key(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(kzt_kz_entry_key(text_to_cstring(PG_GETARG_TEXT_PP(1))));
}

/* The number the entries of table id tid carry for bucket label label. */
Datum
kzt_bucket_number(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(1))
		PG_RETURN_INT64(0);
	PG_RETURN_INT64(kzt_kz_entry_bucket_number(PG_GETARG_INT32(0),
											   text_to_cstring(PG_GETARG_TEXT_PP(1))));
}

/* SipHash-2-4 of data with a 16-byte key, as the bucket numbers use it. */
Datum
kzt_siphash(PG_FUNCTION_ARGS)
{
	bytea	   *key = PG_GETARG_BYTEA_PP(0);
	bytea	   *data = PG_GETARG_BYTEA_PP(1);

	if (VARSIZE_ANY_EXHDR(key) != 16)
		elog(ERROR, "a SipHash key has 16 bytes");
	PG_RETURN_INT64((int64) kzt_kz_siphash24((const uint8 *) VARDATA_ANY(key),
											 VARDATA_ANY(data), VARSIZE_ANY_EXHDR(data)));
}
