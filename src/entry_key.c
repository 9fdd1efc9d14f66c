/*-------------------------------------------------------------------------
 *
 * entry_key.c
 *	  Row keys as the entries carry them (entry_key.h; decisions/0092):
 *	  one format byte, then 'i' a key text that is an int64 in its
 *	  canonical decimal form (what int2, int4 and int8 keys render as) as 8
 *	  bytes (big-endian), 'u' a lowercase hyphenated uuid text (what uuid
 *	  keys render as) as its 16 bytes, 't' any other key text's bytes (so
 *	  "05", "5 " and "-0" stay 't').  The encoding is a function of the key
 *	  text alone, not of the key column's type: a key keeps its one entry
 *	  key across ALTER TABLE ... ALTER COLUMN ... TYPE (integer to text or
 *	  numeric, uuid to text), as it keeps its wire "pk".  It is injective,
 *	  and the key text comes back from the bytes alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "entry_key.h"
#include "pgcompat.h"

#define KEY_INT		'i'
#define KEY_UUID	'u'
#define KEY_TEXT	't'

/*
 * The int64 a key text spells in its canonical decimal form (as int8out
 * writes it: no sign but a minus of a negative number, no leading zero but
 * the number 0 itself, no spaces), or false.
 */
static bool
entry_parse_int(const char *pk, int64 *v)
{
	const char *p = pk;
	uint64		acc = 0;
	bool		neg = false;

	if (*p == '-')
	{
		neg = true;
		p++;
	}
	if (*p < '0' || *p > '9' || (*p == '0' && (neg || p[1] != '\0')))
		return false;
	for (; *p; p++)
	{
		if (*p < '0' || *p > '9' || acc > (PG_UINT64_MAX - 9) / 10)
			return false;
		acc = acc * 10 + (uint64) (*p - '0');
	}
	if (neg ? acc > (uint64) PG_INT64_MAX + 1 : acc > (uint64) PG_INT64_MAX)
		return false;
	*v = neg ? (int64) (0 - acc) : (int64) acc;
	return true;
}

static int
entry_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The 16 bytes of a lowercase hyphenated uuid text, or false. */
static bool
entry_parse_uuid(const char *pk, uint8 *out)
{
	int			i,
				j = 0;

	if (strlen(pk) != 36)
		return false;
	for (i = 0; i < 36; i++)
	{
		if (i == 8 || i == 13 || i == 18 || i == 23)
		{
			if (pk[i] != '-')
				return false;
			continue;
		}
		if (entry_hexval(pk[i]) < 0 || entry_hexval(pk[i + 1]) < 0)
			return false;
		out[j++] = (uint8) (entry_hexval(pk[i]) * 16 + entry_hexval(pk[i + 1]));
		i++;
	}
	return j == 16;
}

bytea *
kz_entry_key(const char *pk)
{
	size_t		len = strlen(pk);
	bytea	   *key;
	char	   *p;
	int64		v;
	uint8		u[16];

	if (entry_parse_int(pk, &v))
	{
		uint64		x = (uint64) v;
		int			i;

		key = palloc(VARHDRSZ + 9);
		SET_VARSIZE(key, VARHDRSZ + 9);
		p = VARDATA(key);
		p[0] = KEY_INT;
		for (i = 0; i < 8; i++)
			p[1 + i] = (char) ((x >> (56 - 8 * i)) & 0xff);
		return key;
	}
	if (entry_parse_uuid(pk, u))
	{
		key = palloc(VARHDRSZ + 17);
		SET_VARSIZE(key, VARHDRSZ + 17);
		p = VARDATA(key);
		p[0] = KEY_UUID;
		memcpy(p + 1, u, 16);
		return key;
	}
	key = palloc(VARHDRSZ + 1 + len);
	SET_VARSIZE(key, VARHDRSZ + 1 + len);
	p = VARDATA(key);
	p[0] = KEY_TEXT;
	memcpy(p + 1, pk, len);
	return key;
}

char *
kz_entry_key_text(const bytea *key)
{
	const char *p = VARDATA_ANY(key);
	size_t		len = VARSIZE_ANY_EXHDR(key);

	if (len == 9 && p[0] == KEY_INT)
	{
		uint64		x = 0;
		int			i;

		for (i = 0; i < 8; i++)
			x = (x << 8) | (uint8) p[1 + i];
		return psprintf(INT64_FORMAT, (int64) x);
	}
	if (len == 17 && p[0] == KEY_UUID)
	{
		static const char hex[] = "0123456789abcdef";
		char	   *s = palloc(37);
		int			i,
					j = 0;

		for (i = 0; i < 16; i++)
		{
			if (i == 4 || i == 6 || i == 8 || i == 10)
				s[j++] = '-';
			s[j++] = hex[((uint8) p[1 + i]) >> 4];
			s[j++] = hex[((uint8) p[1 + i]) & 0xf];
		}
		s[j] = '\0';
		return s;
	}
	if (len >= 1 && p[0] == KEY_TEXT)
		return pnstrdup(p + 1, len - 1);
	elog(ERROR, "malformed kizunasync entry key");
	return NULL;				/* keep compiler quiet */
}

