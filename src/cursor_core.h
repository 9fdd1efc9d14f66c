/*-------------------------------------------------------------------------
 *
 * cursor_core.h
 *	  The kizunasync cursor token codec, free of any PostgreSQL dependency.
 *
 * This file and cursor_core.c are plain C99 (no postgres.h) so that the
 * codec builds outside the backend, for the libFuzzer target in fuzz/.
 * The backend wrapper is cursor.c / cursor.h.
 *
 * Grammar (protocol reference, "Cursor grammar"), matching the whole token:
 *
 *	  bootstrap     = "0"
 *	  checkpoint    = <high-water> [ "~" <hole> ( "." <hole> )* ]
 *	  continuation  = <start> ":" <high-water> [ "~" <hole> ( "." <hole> )* ]
 *
 * Every number is decimal without leading zeros (a lone "0" is allowed) and
 * fits in a signed 64-bit integer.  Holes are >= 1, strictly ascending and
 * strictly below the high-water.  The start has no ordering constraint
 * against the high-water ("12:3" is valid).  No signs, spaces, empty parts
 * or second colon.  Parsing accepts only canonical tokens, so parse followed
 * by encode gives back the same bytes.
 *
 * Limits: at most KZ_CURSOR_MAX_HOLES holes, and a token is at most
 * KZ_CURSOR_MAX_LEN bytes (exactly what the longest valid token needs:
 * 19-digit start and high-water and KZ_CURSOR_MAX_HOLES 19-digit holes).
 * A longer input is rejected before any parsing work.  The parser writes
 * into the caller's KzCursor and never allocates.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_CURSOR_CORE_H
#define KZ_CURSOR_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most holes one token may carry. */
#define KZ_CURSOR_MAX_HOLES		512

/* Decimal digits of INT64_MAX (9223372036854775807). */
#define KZ_CURSOR_MAX_DIGITS	19

/*
 * Longest valid token, in bytes: start, ":", high-water, "~", then
 * KZ_CURSOR_MAX_HOLES holes separated by dots, every number 19 digits:
 * 19 + 1 + 19 + 1 + 512 * 19 + 511 = 10279.  Written as a literal so that
 * error messages can quote it; cursor_core.c checks it against the formula.
 */
#define KZ_CURSOR_MAX_LEN		10279

/* Reasons of the two limits, for callers that enforce them early. */
#define KZ_CURSOR_REASON_TOO_LONG		"token longer than 10279 bytes"
#define KZ_CURSOR_REASON_TOO_MANY_HOLES "more than 512 holes"

/* Buffer size that always holds an encoded token and its terminating NUL. */
#define KZ_CURSOR_BUFSIZE		(KZ_CURSOR_MAX_LEN + 1)

typedef struct KzCursor
{
	bool		has_start;		/* continuation token ("S:H...") */
	int64_t		start;			/* S; meaningful only when has_start */
	int64_t		high_water;		/* H */
	int			nholes;			/* number of entries used in holes[] */
	int64_t		holes[KZ_CURSOR_MAX_HOLES];	/* ascending, each in [1, H) */
} KzCursor;

/* Result codes of kz_cursor_parse and kz_cursor_check. */
typedef enum KzCursorStatus
{
	KZ_CURSOR_OK = 0,
	KZ_CURSOR_EMPTY,			/* empty token */
	KZ_CURSOR_TOO_LONG,			/* longer than KZ_CURSOR_MAX_LEN */
	KZ_CURSOR_SYNTAX,			/* character or part out of place */
	KZ_CURSOR_LEADING_ZERO,		/* number with a leading zero */
	KZ_CURSOR_OVERFLOW,			/* number above INT64_MAX */
	KZ_CURSOR_NEGATIVE,			/* negative value (encode only) */
	KZ_CURSOR_HOLE_ZERO,		/* hole below 1 */
	KZ_CURSOR_HOLE_ORDER,		/* holes not strictly ascending */
	KZ_CURSOR_HOLE_RANGE,		/* hole not below the high-water */
	KZ_CURSOR_TOO_MANY_HOLES,	/* more than KZ_CURSOR_MAX_HOLES holes */
	KZ_CURSOR_BUFFER			/* output buffer too small (encode only) */
} KzCursorStatus;

/*
 * Parse the len bytes at s (not necessarily NUL-terminated; a NUL byte is an
 * ordinary invalid character).  Returns KZ_CURSOR_OK and fills *out, or
 * another status and sets *why (if why is not NULL) to a static,
 * NUL-terminated English reason such as "hole not below the high-water".
 * *out is unspecified on failure.
 */
extern int	kz_cursor_parse(const char *s, size_t len, KzCursor *out,
							const char **why);

/*
 * Check that c describes a token that may be encoded: values >= 0, at most
 * KZ_CURSOR_MAX_HOLES holes, each >= 1, strictly ascending and below the
 * high-water.  Returns a status and sets *why like kz_cursor_parse.
 */
extern int	kz_cursor_check(const KzCursor *c, const char **why);

/*
 * Encode c into buf (buflen bytes, KZ_CURSOR_BUFSIZE is always enough) as a
 * NUL-terminated token: "S:H" when has_start, else "H", followed by
 * "~h1.h2..." when there are holes.  Returns the token length (without the
 * NUL), or 0 when kz_cursor_check fails or the buffer is too small; *why
 * then says which.
 */
extern size_t kz_cursor_encode(const KzCursor *c, char *buf, size_t buflen,
							   const char **why);

/*
 * Sort c's holes ascending in place (without removing duplicates, which
 * kz_cursor_check then reports).  For callers that build a hole set in
 * arbitrary order before encoding it.
 */
extern void kz_cursor_sort_holes(KzCursor *c);

/*
 * The checkpoint a transfer started from: the start of a continuation
 * token, else its high-water.
 */
extern int64_t kz_cursor_origin(const KzCursor *c);

#endif							/* KZ_CURSOR_CORE_H */
