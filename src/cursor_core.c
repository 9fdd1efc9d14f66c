/*-------------------------------------------------------------------------
 *
 * cursor_core.c
 *	  Parse and encode kizunasync cursor tokens (plain C99, see cursor_core.h).
 *
 * The parser is a single left-to-right pass over at most KZ_CURSOR_MAX_LEN
 * bytes; the length check comes first, so a hostile token costs O(1) before
 * it is refused.  Reasons are static strings naming the offending part.
 *
 *-------------------------------------------------------------------------
 */
#include "cursor_core.h"

/* KZ_CURSOR_MAX_LEN must be the length of the longest valid token. */
typedef char kz_cursor_max_len_matches_formula
			[(KZ_CURSOR_MAX_LEN == 2 * KZ_CURSOR_MAX_DIGITS + 2 +
			  KZ_CURSOR_MAX_HOLES * (KZ_CURSOR_MAX_DIGITS + 1) - 1) ? 1 : -1];


/* The three kinds of number in a token, for part-specific reasons. */
typedef enum
{
	PART_START,
	PART_HIGH_WATER,
	PART_HOLE
} KzPart;

static const char *const reason_empty[] = {
	"start is empty", "high-water is empty", "hole is empty"
};
static const char *const reason_leading_zero[] = {
	"start has a leading zero", "high-water has a leading zero",
	"hole has a leading zero"
};
static const char *const reason_overflow[] = {
	"start exceeds 9223372036854775807",
	"high-water exceeds 9223372036854775807",
	"hole exceeds 9223372036854775807"
};

static int
fail(int status, const char *reason, const char **why)
{
	if (why != NULL)
		*why = reason;
	return status;
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Reason for a character found where it does not belong: a few common
 * mistakes get their own wording, anything else is "invalid character".
 */
static const char *
reason_for_char(char c)
{
	if (c == '+' || c == '-')
		return "signs are not allowed";
	if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')
		return "whitespace is not allowed";
	if (is_digit(c) || c == ':' || c == '~' || c == '.')
		return "unexpected character";
	return "invalid character (only digits, \":\", \"~\" and \".\" are allowed)";
}

/*
 * Scan one number of the given part at s[*pos].  On success advance *pos
 * past its digits.  A number must start with a digit; "0" may not be
 * followed by another digit; the value must fit in int64_t.
 */
static int
scan_number(const char *s, size_t len, size_t *pos, KzPart part,
			int64_t *val, const char **why)
{
	size_t		i = *pos;
	int64_t		v = 0;

	if (i >= len || s[i] == ':' || s[i] == '~' || s[i] == '.')
		return fail(KZ_CURSOR_SYNTAX, reason_empty[part], why);
	if (!is_digit(s[i]))
		return fail(KZ_CURSOR_SYNTAX, reason_for_char(s[i]), why);
	if (s[i] == '0' && i + 1 < len && is_digit(s[i + 1]))
		return fail(KZ_CURSOR_LEADING_ZERO, reason_leading_zero[part], why);

	for (; i < len && is_digit(s[i]); i++)
	{
		int			d = s[i] - '0';

		if (v > (INT64_MAX - d) / 10)
			return fail(KZ_CURSOR_OVERFLOW, reason_overflow[part], why);
		v = v * 10 + d;
	}
	*val = v;
	*pos = i;
	return KZ_CURSOR_OK;
}

int
kz_cursor_parse(const char *s, size_t len, KzCursor *out, const char **why)
{
	size_t		pos = 0;
	int64_t		first;
	int			rc;

	if (len > KZ_CURSOR_MAX_LEN)
		return fail(KZ_CURSOR_TOO_LONG,
					KZ_CURSOR_REASON_TOO_LONG, why);
	if (len == 0)
		return fail(KZ_CURSOR_EMPTY, "token is empty", why);

	out->has_start = false;
	out->start = 0;
	out->nholes = 0;

	/* The first number is the start when a colon follows it. */
	if (s[0] == ':')
		return fail(KZ_CURSOR_SYNTAX, reason_empty[PART_START], why);
	rc = scan_number(s, len, &pos, PART_HIGH_WATER, &first, why);
	if (rc != KZ_CURSOR_OK)
	{
		/* Re-attribute errors of a number that turns out to be the start. */
		if (rc == KZ_CURSOR_LEADING_ZERO || rc == KZ_CURSOR_OVERFLOW)
		{
			size_t		j = 0;

			while (j < len && is_digit(s[j]))
				j++;
			if (j < len && s[j] == ':')
				return fail(rc, rc == KZ_CURSOR_OVERFLOW ?
							reason_overflow[PART_START] :
							reason_leading_zero[PART_START], why);
		}
		return rc;
	}

	if (pos < len && s[pos] == ':')
	{
		out->has_start = true;
		out->start = first;
		pos++;
		rc = scan_number(s, len, &pos, PART_HIGH_WATER, &out->high_water, why);
		if (rc != KZ_CURSOR_OK)
			return rc;
	}
	else
		out->high_water = first;

	if (pos == len)
		return KZ_CURSOR_OK;

	switch (s[pos])
	{
		case '~':
			break;
		case ':':
			return fail(KZ_CURSOR_SYNTAX, "more than one colon", why);
		case '.':
			return fail(KZ_CURSOR_SYNTAX, "holes must follow \"~\"", why);
		default:
			return fail(KZ_CURSOR_SYNTAX, reason_for_char(s[pos]), why);
	}
	pos++;

	/* Holes: one or more numbers separated by dots. */
	for (;;)
	{
		int64_t		hole;

		if (out->nholes == KZ_CURSOR_MAX_HOLES)
			return fail(KZ_CURSOR_TOO_MANY_HOLES,
						KZ_CURSOR_REASON_TOO_MANY_HOLES, why);
		rc = scan_number(s, len, &pos, PART_HOLE, &hole, why);
		if (rc != KZ_CURSOR_OK)
			return rc;
		if (hole < 1)
			return fail(KZ_CURSOR_HOLE_ZERO, "hole is zero", why);
		if (out->nholes > 0 && hole <= out->holes[out->nholes - 1])
			return fail(KZ_CURSOR_HOLE_ORDER,
						hole == out->holes[out->nholes - 1] ?
						"duplicate hole" :
						"holes not in strictly ascending order", why);
		if (hole >= out->high_water)
			return fail(KZ_CURSOR_HOLE_RANGE, "hole not below the high-water", why);
		out->holes[out->nholes++] = hole;

		if (pos == len)
			return KZ_CURSOR_OK;
		switch (s[pos])
		{
			case '.':
				break;
			case ':':
				return fail(KZ_CURSOR_SYNTAX, "colon after the holes", why);
			case '~':
				return fail(KZ_CURSOR_SYNTAX, "more than one \"~\"", why);
			default:
				return fail(KZ_CURSOR_SYNTAX, reason_for_char(s[pos]), why);
		}
		pos++;
	}
}

int
kz_cursor_check(const KzCursor *c, const char **why)
{
	int			i;

	if (c->has_start && c->start < 0)
		return fail(KZ_CURSOR_NEGATIVE, "start is negative", why);
	if (c->high_water < 0)
		return fail(KZ_CURSOR_NEGATIVE, "high-water is negative", why);
	if (c->nholes < 0)
		return fail(KZ_CURSOR_NEGATIVE, "hole count is negative", why);
	if (c->nholes > KZ_CURSOR_MAX_HOLES)
		return fail(KZ_CURSOR_TOO_MANY_HOLES,
					KZ_CURSOR_REASON_TOO_MANY_HOLES, why);
	for (i = 0; i < c->nholes; i++)
	{
		if (c->holes[i] < 1)
			return fail(KZ_CURSOR_HOLE_ZERO, "hole below 1", why);
		if (i > 0 && c->holes[i] <= c->holes[i - 1])
			return fail(KZ_CURSOR_HOLE_ORDER,
						c->holes[i] == c->holes[i - 1] ?
						"duplicate hole" :
						"holes not in strictly ascending order", why);
		if (c->holes[i] >= c->high_water)
			return fail(KZ_CURSOR_HOLE_RANGE, "hole not below the high-water", why);
	}
	return KZ_CURSOR_OK;
}

/* Append the decimal form of v (>= 0) at buf[*pos]; false if it does not fit. */
static bool
put_number(char *buf, size_t buflen, size_t *pos, int64_t v)
{
	char		tmp[KZ_CURSOR_MAX_DIGITS];
	size_t		n = 0;

	do
	{
		tmp[n++] = (char) ('0' + (int) (v % 10));
		v /= 10;
	} while (v > 0);

	if (buflen - *pos < n + 1)	/* keep room for the terminating NUL */
		return false;
	while (n > 0)
		buf[(*pos)++] = tmp[--n];
	return true;
}

static bool
put_char(char *buf, size_t buflen, size_t *pos, char ch)
{
	if (buflen - *pos < 2)
		return false;
	buf[(*pos)++] = ch;
	return true;
}

size_t
kz_cursor_encode(const KzCursor *c, char *buf, size_t buflen, const char **why)
{
	size_t		pos = 0;
	int			i;
	bool		ok = true;

	if (kz_cursor_check(c, why) != KZ_CURSOR_OK)
		return 0;
	if (buf == NULL || buflen == 0)
	{
		fail(KZ_CURSOR_BUFFER, "output buffer too small", why);
		return 0;
	}

	if (c->has_start)
		ok = put_number(buf, buflen, &pos, c->start) &&
			put_char(buf, buflen, &pos, ':');
	ok = ok && put_number(buf, buflen, &pos, c->high_water);
	for (i = 0; ok && i < c->nholes; i++)
		ok = put_char(buf, buflen, &pos, i == 0 ? '~' : '.') &&
			put_number(buf, buflen, &pos, c->holes[i]);

	if (!ok)
	{
		buf[0] = '\0';
		fail(KZ_CURSOR_BUFFER, "output buffer too small", why);
		return 0;
	}
	buf[pos] = '\0';
	return pos;
}

void
kz_cursor_sort_holes(KzCursor *c)
{
	int			i;

	if (c->nholes < 2 || c->nholes > KZ_CURSOR_MAX_HOLES)
		return;
	/* insertion sort: at most KZ_CURSOR_MAX_HOLES entries, no allocation */
	for (i = 1; i < c->nholes; i++)
	{
		int64_t		v = c->holes[i];
		int			j = i;

		while (j > 0 && c->holes[j - 1] > v)
		{
			c->holes[j] = c->holes[j - 1];
			j--;
		}
		c->holes[j] = v;
	}
}

int64_t
kz_cursor_origin(const KzCursor *c)
{
	return c->has_start ? c->start : c->high_water;
}
