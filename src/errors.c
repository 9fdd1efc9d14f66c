/*-------------------------------------------------------------------------
 *
 * errors.c
 *	  Helpers for error reports (errors.h): quoting client text, and the
 *	  context line naming the entry point an error happened in.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "lib/stringinfo.h"

#include "errors.h"

/*
 * Quote a (possibly hostile) client string for an error message: in double
 * quotes, printable ASCII as is, '"' and '\' backslash-escaped, every other
 * byte as \xNN, and at most KZ_QUOTE_MAX_BYTES bytes followed by "..."
 * when there is more.
 */
char *
kz_quote_for_message(const char *s, size_t len, bool more)
{
	StringInfoData buf;
	size_t		n = Min(len, KZ_QUOTE_MAX_BYTES);
	size_t		i;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '"');
	for (i = 0; i < n; i++)
	{
		unsigned char ch = (unsigned char) s[i];

		if (ch == '"' || ch == '\\')
			appendStringInfo(&buf, "\\%c", ch);
		else if (ch >= 0x20 && ch < 0x7f)
			appendStringInfoChar(&buf, (char) ch);
		else
			appendStringInfo(&buf, "\\x%02x", ch);
	}
	appendStringInfoChar(&buf, '"');
	if (more || len > n)
		appendStringInfoString(&buf, "...");
	return buf.data;
}

static void
errors_context_callback(void *arg)
{
	errcontext("%s", (const char *) arg);
}

void
kz_errcontext_push(ErrorContextCallback *cb, const char *what)
{
	cb->callback = errors_context_callback;
	cb->arg = (void *) what;
	cb->previous = error_context_stack;
	error_context_stack = cb;
}

void
kz_errcontext_pop(ErrorContextCallback *cb)
{
	error_context_stack = cb->previous;
}

void
kz_require_read_write(const char *what)
{
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot record %s in a read-only transaction", what),
				 errdetail("A pull records the buckets it delivers rows of, and the clients it serves."),
				 errhint("Call it with POST: the Data API runs GET requests read-only.")));
}
