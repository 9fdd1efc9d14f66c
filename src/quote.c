/*-------------------------------------------------------------------------
 *
 * quote.c
 *	  Quoting client-supplied text for messages (quote.h).  Plain C.
 *
 *-------------------------------------------------------------------------
 */
#include "quote.h"

char *
kz_quote(char *buf, const char *s, size_t len, bool more)
{
	static const char hex[] = "0123456789abcdef";
	size_t		n = len < KZ_QUOTE_MAX_BYTES ? len : KZ_QUOTE_MAX_BYTES;
	size_t		i;
	char	   *p = buf;

	*p++ = '"';
	for (i = 0; i < n; i++)
	{
		unsigned char ch = (unsigned char) s[i];

		if (ch == '"' || ch == '\\')
		{
			*p++ = '\\';
			*p++ = (char) ch;
		}
		else if (ch >= 0x20 && ch < 0x7f)
			*p++ = (char) ch;
		else
		{
			*p++ = '\\';
			*p++ = 'x';
			*p++ = hex[ch >> 4];
			*p++ = hex[ch & 0xf];
		}
	}
	*p++ = '"';
	if (more || len > n)
	{
		*p++ = '.';
		*p++ = '.';
		*p++ = '.';
	}
	*p = '\0';
	return buf;
}
