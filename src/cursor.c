/*-------------------------------------------------------------------------
 *
 * cursor.c
 *	  Backend side of the cursor token codec: error reporting, text
 *	  conversion, and the internal SQL functions kizunasync.cursor_parse and
 *	  kizunasync.cursor_encode used by the tests.
 *
 * The parsing itself is cursor_core.c, which has no backend dependency.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "cursor.h"
#include "errors.h"

PG_FUNCTION_INFO_V1(kizunasync_cursor_parse);
PG_FUNCTION_INFO_V1(kizunasync_cursor_encode);

/*
 * The reasons of cursor_core.c are lowercase phrases; as an errdetail they
 * become a sentence.
 */
static char *
reason_sentence(const char *why)
{
	char	   *s = psprintf("%s.", why);

	if (s[0] >= 'a' && s[0] <= 'z')
		s[0] = (char) (s[0] - 'a' + 'A');
	return s;
}

static void
report_null(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid cursor token: null"),
			 errdetail("The cursor is null."),
			 errhint("A client without a checkpoint sends the bootstrap cursor \"0\".")));
}

static void
report_invalid(const char *s, size_t len, bool more, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid cursor token: %s", kz_quote_for_message(s, len, more)),
			 errdetail("%s", reason_sentence(why))));
}

void
kz_cursor_from_bytes(const char *s, size_t len, KzCursor *out)
{
	const char *why = "invalid token";

	if (s == NULL)
		report_null();
	if (kz_cursor_parse(s, len, out, &why) != KZ_CURSOR_OK)
		report_invalid(s, len, false, why);
}

void
kz_cursor_from_text(const text *t, KzCursor *out)
{
	if (t == NULL)
		report_null();
	kz_cursor_from_bytes(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), out);
}

void
kz_cursor_from_datum(Datum value, bool isnull, KzCursor *out)
{
	text	   *t;

	if (isnull)
		report_null();

	/* Refuse an oversized token without detoasting more than its head. */
	if (toast_raw_datum_size(value) - VARHDRSZ > KZ_CURSOR_MAX_LEN)
	{
		t = (text *) PG_DETOAST_DATUM_SLICE(value, 0, KZ_QUOTE_MAX_BYTES);
		report_invalid(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), true,
					   KZ_CURSOR_REASON_TOO_LONG);
	}

	t = (text *) PG_DETOAST_DATUM_PACKED(value);
	kz_cursor_from_bytes(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), out);
}

text *
kz_cursor_to_text(const KzCursor *c)
{
	char		buf[KZ_CURSOR_BUFSIZE];
	const char *why = "invalid cursor";
	size_t		len;

	len = kz_cursor_encode(c, buf, sizeof(buf), &why);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot encode cursor token"),
				 errdetail("%s", reason_sentence(why))));
	return cstring_to_text_with_len(buf, (int) len);
}

/*
 * kizunasync.cursor_parse(cursor text,
 *		OUT start bigint, OUT high_water bigint, OUT holes bigint[])
 *
 * Not strict: a NULL cursor raises like any invalid one.  start is NULL for
 * a checkpoint token; holes is empty when the token has none.
 */
Datum
kizunasync_cursor_parse(PG_FUNCTION_ARGS)
{
	KzCursor	c;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	ArrayType  *holes;

	kz_cursor_from_datum(PG_ARGISNULL(0) ? (Datum) 0 : PG_GETARG_DATUM(0),
						 PG_ARGISNULL(0), &c);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	if (c.nholes == 0)
		holes = construct_empty_array(INT8OID);
	else
	{
		Datum	   *elems = palloc(sizeof(Datum) * c.nholes);
		int			i;

		for (i = 0; i < c.nholes; i++)
			elems[i] = Int64GetDatum(c.holes[i]);
		holes = construct_array(elems, c.nholes, INT8OID, sizeof(int64),
								FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	}

	if (c.has_start)
		values[0] = Int64GetDatum(c.start);
	else
		nulls[0] = true;
	values[1] = Int64GetDatum(c.high_water);
	values[2] = PointerGetDatum(holes);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

static void
report_encode_arg(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("cannot encode cursor token"),
			 errdetail("%s", detail)));
}

/*
 * kizunasync.cursor_encode(start bigint, high_water bigint,
 *		holes bigint[] DEFAULT '{}') returns text
 *
 * start NULL gives a checkpoint token, else a continuation.  The holes are a
 * set: they are sorted here, and a duplicate is an error.  NULL high_water,
 * NULL holes array, NULL element and more than KZ_CURSOR_MAX_HOLES holes
 * (checked before the array is unpacked) are errors, as is anything
 * kz_cursor_check refuses.
 */
Datum
kizunasync_cursor_encode(PG_FUNCTION_ARGS)
{
	KzCursor	c;
	ArrayType  *arr;
	int			nitems;

	if (PG_ARGISNULL(1))
		report_encode_arg("The high-water is null.");
	if (PG_ARGISNULL(2))
		report_encode_arg("The holes array is null.");

	c.has_start = !PG_ARGISNULL(0);
	c.start = c.has_start ? PG_GETARG_INT64(0) : 0;
	c.high_water = PG_GETARG_INT64(1);

	arr = PG_GETARG_ARRAYTYPE_P(2);
	if (ARR_NDIM(arr) > 1)
		report_encode_arg("The holes array must be one-dimensional.");
	nitems = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	if (nitems > KZ_CURSOR_MAX_HOLES)
		report_encode_arg(reason_sentence(KZ_CURSOR_REASON_TOO_MANY_HOLES));

	c.nholes = 0;
	if (nitems > 0)
	{
		Datum	   *elems;
		bool	   *elemnulls;
		int			n;
		int			i;

		Assert(ARR_ELEMTYPE(arr) == INT8OID);
		deconstruct_array(arr, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
						  TYPALIGN_DOUBLE, &elems, &elemnulls, &n);
		for (i = 0; i < n; i++)
		{
			if (elemnulls[i])
				report_encode_arg("A hole is null.");
			c.holes[i] = DatumGetInt64(elems[i]);
		}
		c.nholes = n;
		kz_cursor_sort_holes(&c);
	}

	PG_RETURN_TEXT_P(kz_cursor_to_text(&c));
}
