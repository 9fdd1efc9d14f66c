/*-------------------------------------------------------------------------
 *
 * request_error.h
 *	  The error a request parser (request_pull.c, request_push.c) hands
 *	  back instead of raising it: SQLSTATE, message and detail, filled in
 *	  by kz_req_error and raised by the backend with kz_raise_request_error
 *	  (errors.h).  Client text in a message is quoted with kz_quote
 *	  (quote.h).
 *
 *	  Plain C (no postgres.h): the parsers also run in the libFuzzer
 *	  targets.  Implemented in src/request_error.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_REQUEST_ERROR_H
#define KZ_REQUEST_ERROR_H

#include "quote.h"

/* SQLSTATEs the parsers report (PostgreSQL's codes, as text). */
#define KZ_SQLSTATE_INVALID_PARAMETER	"22023"
#define KZ_SQLSTATE_INVALID_TEXT		"22P02"
#define KZ_SQLSTATE_NUMERIC_RANGE		"22003"
#define KZ_SQLSTATE_PROGRAM_LIMIT		"54000"
#define KZ_SQLSTATE_OUT_OF_MEMORY		"53200"

#if defined(__GNUC__) || defined(__clang__)
#define KZ_PRINTF_ATTR(f, a) __attribute__((format(printf, f, a)))
#else
#define KZ_PRINTF_ATTR(f, a)
#endif

/* An error to raise: SQLSTATE, message and (possibly empty) detail. */
typedef struct KzReqError
{
	char		sqlstate[6];
	char		message[640];	/* room for two quoted client strings */
	char		detail[320];
} KzReqError;

/*
 * Fill in *err: sqlstate (five characters), detail (NULL: none; a full
 * sentence otherwise) and the message, formatted from fmt (lowercase, no
 * trailing period).  Returns -1, so a parser can "return kz_req_error(...)".
 */
extern int	kz_req_error(KzReqError *err, const char *sqlstate, const char *detail,
						 const char *fmt,...) KZ_PRINTF_ATTR(4, 5);

#endif							/* KZ_REQUEST_ERROR_H */
