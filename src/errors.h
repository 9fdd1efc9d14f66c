/*-------------------------------------------------------------------------
 *
 * errors.h
 *	  Helpers for error reports (PostgreSQL's message style: no program
 *	  prefix in errmsg; where an error happened goes in errcontext).
 *	  Implemented in src/errors.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_ERRORS_H
#define KZ_ERRORS_H

/* At most this many bytes of a client string are quoted in a message. */
#define KZ_QUOTE_MAX_BYTES	64

/*
 * Quote a (possibly hostile) client string for an error message: in double
 * quotes, printable ASCII as is, '"' and '\\' backslash-escaped, every other
 * byte as \\xNN, at most KZ_QUOTE_MAX_BYTES bytes, then "..." when there is
 * more (or when more is set).
 */
extern char *kz_quote_for_message(const char *s, size_t len, bool more);

/*
 * Add a context line "what" to every error raised until the matching pop
 * (an entry point's SQL name: "kizunasync.pull()").  Error recovery resets
 * the context stack, so only a normal return must pop.
 */
extern void kz_errcontext_push(ErrorContextCallback *cb, const char *what);
extern void kz_errcontext_pop(ErrorContextCallback *cb);

/*
 * Refuse, with 25006 and a hint to use POST, to record bookkeeping ("what")
 * in a read-only transaction: the Data API runs GET requests read-only.
 */
extern void kz_require_read_write(const char *what);

#endif							/* KZ_ERRORS_H */
