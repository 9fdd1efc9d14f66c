/*-------------------------------------------------------------------------
 *
 * errors.h
 *	  Errors and messages: the protocol's SQLSTATEs, quoting client text,
 *	  raising a request parser's error, the error context naming the entry
 *	  point, and catching an error in a subtransaction.  Messages follow
 *	  PostgreSQL's style guide: lowercase errmsg without a program prefix
 *	  (where an error happened goes in errcontext), full sentences in
 *	  errdetail and errhint, client text always through kz_quote.
 *	  Implemented in src/errors.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_ERRORS_H
#define KZ_ERRORS_H

#include "utils/resowner.h"

#include "request_error.h"

/* Custom SQLSTATEs of the protocol (README: Function reference). */
#define ERRCODE_KZ_PULL_BUCKET_REQUIRED		MAKE_SQLSTATE('K','Z','L','0','1')
#define ERRCODE_KZ_PULL_COLUMN_POLICY		MAKE_SQLSTATE('K','Z','L','0','2')
#define ERRCODE_KZ_PULL_NEEDS_PRIMARY		MAKE_SQLSTATE('K','Z','L','0','3')
#define ERRCODE_KZ_PUSH_PULL_ONLY			MAKE_SQLSTATE('K','Z','P','0','1')
#define ERRCODE_KZ_PUSH_BATCH_TOO_LARGE		MAKE_SQLSTATE('K','Z','P','0','2')
#define ERRCODE_KZ_PUSH_ATOMIC_REQUIRED		MAKE_SQLSTATE('K','Z','P','0','3')

/*
 * Quote a (possibly hostile) client string for an error message, palloc'd
 * (kz_quote of quote.h: at most KZ_QUOTE_MAX_BYTES bytes, escaped, ASCII).
 */
extern char *kz_quote_for_message(const char *s, size_t len, bool more);

/* Raise the error a request parser handed back (request_error.h). */
extern void kz_raise_request_error(const KzReqError *err) pg_attribute_noreturn();

/*
 * Add a context line "what" to every error raised until the matching pop
 * (an entry point's SQL name: "kizunasync.pull()").  Error recovery resets
 * the context stack, so only a normal return must pop.
 */
extern void kz_errcontext_push(ErrorContextCallback *cb, const char *what);
extern void kz_errcontext_pop(ErrorContextCallback *cb);

/*
 * In the PG_CATCH block of an internal subtransaction begun in memory
 * context cxt under resource owner owner: copy the error into cxt, roll the
 * subtransaction back, and restore cxt and owner.  The caller re-throws the
 * returned error (ReThrowError) or turns it into an answer and frees it.
 */
extern ErrorData *kz_subxact_catch(MemoryContext cxt, ResourceOwner owner);

/*
 * Refuse, with 25006 and a hint to use POST, to record bookkeeping ("what")
 * in a read-only transaction: the Data API runs GET requests read-only.
 */
extern void kz_require_read_write(const char *what);

#endif							/* KZ_ERRORS_H */
