/*-------------------------------------------------------------------------
 *
 * quote.h
 *	  Quoting client-supplied text for messages: the one implementation,
 *	  used by the request parsers (plain C, also built into the libFuzzer
 *	  targets) and by the backend's errors.c (kz_quote_for_message).
 *
 *	  Plain C (no postgres.h).  Implemented in src/quote.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_QUOTE_H
#define KZ_QUOTE_H

#include <stdbool.h>
#include <stddef.h>

/* At most this many bytes of a client string are quoted in a message. */
#define KZ_QUOTE_MAX_BYTES	64

/* Size of a buffer that holds any quoted string, its NUL included. */
#define KZ_QUOTE_SIZE		(2 + 4 * KZ_QUOTE_MAX_BYTES + 3 + 1)

/*
 * Write s[0 .. len-1], a (possibly hostile) client string, into buf (of at
 * least KZ_QUOTE_SIZE bytes) as it may appear in a message: in double
 * quotes, printable ASCII as is, '"' and '\\' backslash-escaped, every other
 * byte as \\xNN, at most KZ_QUOTE_MAX_BYTES bytes, then "..." when there is
 * more (or when more is set).  The result is ASCII whatever s holds.
 * Returns buf.
 */
extern char *kz_quote(char *buf, const char *s, size_t len, bool more);

#endif							/* KZ_QUOTE_H */
