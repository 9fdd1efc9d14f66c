/*-------------------------------------------------------------------------
 *
 * errors.c
 *	  Helpers for error reports (errors.h): quoting client text, raising a
 *	  request parser's error, the context line naming the entry point an
 *	  error happened in, and catching an error in a subtransaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"

#include "errors.h"

char *
kz_quote_for_message(const char *s, size_t len, bool more)
{
	return kz_quote(palloc(KZ_QUOTE_SIZE), s, len, more);
}

void
kz_raise_request_error(const KzReqError *err)
{
	ereport(ERROR,
			(errcode(MAKE_SQLSTATE(err->sqlstate[0], err->sqlstate[1], err->sqlstate[2],
								   err->sqlstate[3], err->sqlstate[4])),
			 errmsg("%s", err->message),
			 err->detail[0] ? errdetail("%s", err->detail) : 0));
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

ErrorData *
kz_subxact_catch(MemoryContext cxt, ResourceOwner owner)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return edata;
}
