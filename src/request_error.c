/*-------------------------------------------------------------------------
 *
 * request_error.c
 *	  The request parsers' error record (request_error.h).  Plain C.
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "request_error.h"

int
kz_req_error(KzReqError *err, const char *sqlstate, const char *detail, const char *fmt,...)
{
	va_list		ap;

	memcpy(err->sqlstate, sqlstate, 5);
	err->sqlstate[5] = '\0';
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	snprintf(err->detail, sizeof(err->detail), "%s", detail ? detail : "");
	return -1;
}
