/*-------------------------------------------------------------------------
 *
 * request_pull_jsonb.c
 *	  The buckets argument parsed from its jsonb (request_pull_jsonb.h).
 *
 *	  kz_pull_request_parse() parses the JSON text of the argument with
 *	  jansson: at a thousand bucket entries, printing the text and
 *	  parsing it again cost about two thirds of an empty pull.  This walks
 *	  the jsonb once with its iterator and gives what that parser gives,
 *	  in the same order of precedence:
 *	    1. the text length limit: the text of a jsonb is at most six bytes
 *	       per byte of its binary form (an escaped control character), but
 *	       for its numbers, whose text may be longer (a scale of 1,000
 *	       digits is a few bytes); they are measured as printed.  When that
 *	       bound passes the limit the caller prints the text and parses it;
 *	    2. the nesting depth (containers, as the text's brackets count);
 *	    3. a number jansson refuses: an integer outside int64, a real
 *	       beyond double (jansson's numeric overflow);
 *	    4. the first error of the structure, in the order the text parser
 *	       meets it: not an array, too many entries, then entry by entry
 *	       (an unknown key first, then the table, then the params).
 *	  Keys come in jsonb's order, which is the order of the printed text.
 *	  Numbers print as numeric_out() prints them (JsonbToCString does the
 *	  same): without a decimal point jansson reads an integer, else a real.
 *	  Strings are valid UTF-8 in a UTF-8 database and hold no NUL; in any
 *	  other encoding the caller parses the text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <math.h>

#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

#include "request_pull_jsonb.h"

/* What a container of the walk is. */
typedef enum WalkKind
{
	WALK_OTHER,					/* nothing to build from it */
	WALK_TOP,					/* the buckets array */
	WALK_ENTRY,					/* a bucket entry object */
	WALK_PARAMS					/* an entry's params object */
} WalkKind;

/* The key of the entry whose value comes next. */
typedef enum WalkKey
{
	KEY_TABLE,
	KEY_PARAMS,
	KEY_UNKNOWN
} WalkKey;

typedef struct JsonbWalk
{
	int			max_buckets;
	KzPullRequest *out;
	KzReqError *err;
	bool		failed;			/* a structure error is in *err: build nothing more */
	bool		overflow;
	size_t		text_len;		/* the argument's text (JsonbToCString's) so far */
	size_t		max_text;		/* refused past this: kz_pull_max_text() */
	bool		first;			/* as JsonbToCString: no ", " before the next item */
	int			nentries;		/* entries of the top array seen */

	/* the entry being read */
	KzPullBucket *b;
	int			idx;
	WalkKey		key;
	const char *unknown;		/* its first unknown key */
	int			unknown_len;
	bool		has_table;
	bool		table_string;
	const char *table;
	int			table_len;
	bool		has_params;
	bool		params_object;
	bool		params_failed;	/* perr holds the params' first error */
	KzReqError	perr;
	KzPullParam *param;			/* the param whose value comes next */
} JsonbWalk;

static char *
walk_copy(const char *s, int len)
{
	char	   *p = palloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/*
 * The length of a string as JsonbToCString prints it (escape_json: quoted,
 * '"', '\\' and \b \f \n \r \t as two characters, other control
 * characters as \u00XX).  The text parser's limit is on that text, so the
 * walk measures it exactly without printing it.
 */
static size_t
walk_string_len(const char *s, int len)
{
	size_t		n = 2;
	int			i;

	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' ||
			c == '\r' || c == '\t')
			n += 2;
		else if (c < ' ')
			n += 6;
		else
			n += 1;
	}
	return n;
}

/*
 * A number as jansson reads its printed text: *text is that text (the
 * caller frees it unless it keeps it); sets w->overflow when jansson
 * refuses it.  Returns true for an integer.
 */
static bool
walk_number(JsonbWalk *w, Numeric num, char **text)
{
	char	   *s = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(num)));
	bool		integer = strchr(s, '.') == NULL;

	w->text_len += strlen(s);
	errno = 0;
	if (integer)
		(void) strtoll(s, NULL, 10);
	else
	{
		double		d = strtod(s, NULL);

		if (!((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE))
			errno = 0;
	}
	if (errno == ERANGE)
		w->overflow = true;
	*text = s;
	return integer;
}

/* Record the first structure error (the request is refused: build no more). */
#define walk_fail(w, ...) \
	do { \
		if (!(w)->failed) \
		{ \
			(void) kz_req_error((w)->err, __VA_ARGS__); \
			(w)->failed = true; \
		} \
	} while (0)

/* Record the params' first error, raised when the entry has no other. */
#define walk_param_fail(w, ...) \
	do { \
		if (!(w)->params_failed) \
		{ \
			(void) kz_req_error(&(w)->perr, __VA_ARGS__); \
			(w)->params_failed = true; \
		} \
	} while (0)

static void
walk_entry_begin(JsonbWalk *w, int idx)
{
	w->b = &w->out->buckets[idx];
	w->b->table = NULL;
	w->b->nparams = 0;
	w->b->params = NULL;
	w->idx = idx;
	w->unknown = NULL;
	w->has_table = w->table_string = false;
	w->has_params = w->params_object = w->params_failed = false;
	w->param = NULL;
}

/* The entry's end: its first error (as parse_entry() orders them), or it is read. */
static void
walk_entry_end(JsonbWalk *w)
{
	if (w->unknown != NULL)
	{
		char		shown[KZ_QUOTE_SIZE];

		kz_quote(shown, w->unknown, w->unknown_len, false);
		walk_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
				  KZ_PULL_D_ENTRY_KEYS,
				  KZ_PULL_M_UNKNOWN_KEY, w->idx, shown);
	}
	else if (!w->has_table || !w->table_string)
		walk_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
				  KZ_PULL_D_TABLE_STRING,
				  KZ_PULL_M_NO_TABLE, w->idx);
	else if (w->table_len == 0 || w->table_len > KZ_PULL_MAX_NAME)
		walk_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
				  KZ_PULL_D_TABLE_NAME,
				  KZ_PULL_M_TABLE_NAME, w->idx);
	else if (w->has_params && !w->params_object)
		walk_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
				  KZ_PULL_D_PARAMS_OBJECT,
				  KZ_PULL_M_PARAMS_OBJECT, w->idx);
	else if (w->params_failed)
	{
		if (!w->failed)
			*w->err = w->perr;
		w->failed = true;
	}
	else
	{
		w->b->table = walk_copy(w->table, w->table_len);
		if (!w->has_params)
			w->b->nparams = 0;	/* a missing params object means {} */
		w->out->nbuckets = w->idx + 1;
	}
}

/* A container begins at depth (1: the root) inside a parent of kind parent. */
static WalkKind
walk_container(JsonbWalk *w, WalkKind parent, int depth, JsonbIteratorToken tok, JsonbValue *v)
{
	if (w->failed)
		return WALK_OTHER;
	if (depth == 1)
	{
		if (tok != WJB_BEGIN_ARRAY)
		{
			walk_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
					  KZ_PULL_D_ARRAY,
					  KZ_PULL_M_ARRAY);
			return WALK_OTHER;
		}
		if (v->val.array.nElems > w->max_buckets)
		{
			char		detail[sizeof(w->err->detail)];

			snprintf(detail, sizeof(detail),
					 KZ_PULL_D_TOO_MANY, (size_t) v->val.array.nElems);
			walk_fail(w, KZ_SQLSTATE_INVALID_PARAMETER, detail,
					  KZ_PULL_M_TOO_MANY, w->max_buckets);
			return WALK_OTHER;
		}
		if (v->val.array.nElems > 0)
			w->out->buckets = palloc(sizeof(KzPullBucket) * v->val.array.nElems);
		return WALK_TOP;
	}
	if (parent == WALK_TOP)
	{
		int			idx = w->nentries++;

		if (tok != WJB_BEGIN_OBJECT)
		{
			walk_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
					  KZ_PULL_D_ENTRY,
					  KZ_PULL_M_ENTRY_OBJECT, idx);
			return WALK_OTHER;
		}
		walk_entry_begin(w, idx);
		return WALK_ENTRY;
	}
	if (parent == WALK_ENTRY)
	{
		/* a container as the value of the entry's key */
		if (w->key == KEY_TABLE)
			w->has_table = true;
		else if (w->key == KEY_PARAMS)
		{
			w->has_params = true;
			if (tok == WJB_BEGIN_OBJECT)
			{
				int			n = v->val.object.nPairs;

				w->params_object = true;
				if (n > KZ_PULL_MAX_PARAMS)
				{
					walk_param_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
									KZ_PULL_D_PARAMS_COUNT,
									KZ_PULL_M_PARAMS_COUNT,
									w->idx, (size_t) n, KZ_PULL_MAX_PARAMS);
					return WALK_OTHER;
				}
				if (n > 0)
					w->b->params = palloc(sizeof(KzPullParam) * n);
				return WALK_PARAMS;
			}
		}
	}
	/* a param's value that is a container lies too deep: refused for its depth */
	return WALK_OTHER;
}

/* A key of an object of kind k. */
static void
walk_key(JsonbWalk *w, WalkKind k, JsonbValue *v)
{
	const char *s = v->val.string.val;
	int			len = v->val.string.len;

	if (w->failed)
		return;
	if (k == WALK_ENTRY)
	{
		if (len == 5 && memcmp(s, "table", 5) == 0)
			w->key = KEY_TABLE;
		else if (len == 6 && memcmp(s, "params", 6) == 0)
			w->key = KEY_PARAMS;
		else
		{
			w->key = KEY_UNKNOWN;
			if (w->unknown == NULL)
			{
				w->unknown = s;
				w->unknown_len = len;
			}
		}
	}
	else if (k == WALK_PARAMS && !w->params_failed)
	{
		char		shown[KZ_QUOTE_SIZE];

		w->param = NULL;
		if (len == 0 || len > KZ_PULL_MAX_NAME)
		{
			kz_quote(shown, s, len, false);
			walk_param_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
							KZ_PULL_D_PARAM_NAME,
							KZ_PULL_M_PARAM_NAME, w->idx, shown);
			return;
		}
		w->param = &w->b->params[w->b->nparams];
		w->param->name = walk_copy(s, len);
		w->param->kind = KZ_PARAM_NULL;
		w->param->text = NULL;
	}
}

/* A param's scalar value. */
static void
walk_param_value(JsonbWalk *w, JsonbValue *v, char **numtext, bool integer)
{
	KzPullParam *p = w->param;
	char		shown[KZ_QUOTE_SIZE];

	if (p == NULL || w->params_failed)
		return;
	switch (v->type)
	{
		case jbvNull:
			p->kind = KZ_PARAM_NULL;
			p->text = NULL;
			break;
		case jbvBool:
			p->kind = KZ_PARAM_BOOL;
			p->text = pstrdup(v->val.boolean ? "true" : "false");
			break;
		case jbvString:
			if (v->val.string.len > KZ_PULL_MAX_VALUE)
			{
				kz_quote(shown, p->name, strlen(p->name), false);
				walk_param_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
								KZ_PULL_D_VALUE_LONG,
								KZ_PULL_M_VALUE_LONG,
								w->idx, shown);
				return;
			}
			p->kind = KZ_PARAM_STRING;
			p->text = walk_copy(v->val.string.val, v->val.string.len);
			break;
		case jbvNumeric:
			if (integer)
			{
				p->kind = KZ_PARAM_INTEGER;
				p->text = *numtext;
				*numtext = NULL;	/* kept */
				break;
			}
			/* FALLTHROUGH */
		default:
			kz_quote(shown, p->name, strlen(p->name), false);
			walk_param_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
							KZ_PULL_D_VALUE_TYPE,
							KZ_PULL_M_VALUE_TYPE,
							w->idx, shown);
			return;
	}
	w->b->nparams++;
	w->param = NULL;
}

/* A scalar: an element of an array, or a value of an object, of kind k. */
static void
walk_scalar(JsonbWalk *w, WalkKind k, JsonbIteratorToken tok, JsonbValue *v)
{
	char	   *numtext = NULL;
	bool		integer = false;

	switch (v->type)
	{
		case jbvNumeric:
			integer = walk_number(w, v->val.numeric, &numtext);
			break;
		case jbvString:
			w->text_len += walk_string_len(v->val.string.val, v->val.string.len);
			break;
		case jbvBool:
			w->text_len += v->val.boolean ? 4 : 5;
			break;
		default:
			w->text_len += 4;	/* null */
			break;
	}
	if (w->failed)
		;
	else if (k == WALK_TOP)
		walk_fail(w, KZ_SQLSTATE_INVALID_PARAMETER,
				  KZ_PULL_D_ENTRY,
				  KZ_PULL_M_ENTRY_OBJECT, w->nentries++);
	else if (k == WALK_ENTRY && w->key == KEY_TABLE)
	{
		w->has_table = true;
		w->table_string = v->type == jbvString;
		if (w->table_string)
		{
			w->table = v->val.string.val;
			w->table_len = v->val.string.len;
		}
	}
	else if (k == WALK_ENTRY && w->key == KEY_PARAMS)
		w->has_params = true;	/* a scalar: not an object */
	else if (k == WALK_PARAMS)
		walk_param_value(w, v, &numtext, integer);
	if (numtext != NULL)
		pfree(numtext);			/* the walk keeps only a param's integer */
}

bool
kz_pull_request_from_jsonb(Jsonb *bj, int max_buckets, KzPullRequest *out, KzReqError *err,
						   int *rc)
{
	JsonbWalk	w;
	JsonbIterator *it;
	JsonbIteratorToken tok;
	JsonbValue	v;
	WalkKind	kinds[KZ_PULL_MAX_DEPTH + 2];
	int			depth = 0;
	int			maxdepth = 0;
	char		detail[sizeof(err->detail)];

	memset(&w, 0, sizeof(w));
	out->nbuckets = 0;
	out->buckets = NULL;
	w.max_buckets = Min(Max(max_buckets, 1), KZ_PULL_MAX_BUCKETS_LIMIT);
	w.max_text = kz_pull_max_text(w.max_buckets);
	w.first = true;
	w.out = out;
	w.err = err;

	if (JB_ROOT_IS_SCALAR(bj))
	{
		/* no brackets in its text; not an array */
		if (!JsonbExtractScalar(&bj->root, &v))
			elog(ERROR, "invalid jsonb scalar");
		walk_scalar(&w, WALK_OTHER, WJB_ELEM, &v);
		walk_fail(&w, KZ_SQLSTATE_INVALID_PARAMETER,
				  KZ_PULL_D_ARRAY,
				  KZ_PULL_M_ARRAY);
	}
	else
	{
		it = JsonbIteratorInit(&bj->root);

		/*
		 * The text is measured as JsonbToCString writes it (", " between
		 * items, ": " after a key), and the walk stops as soon as it is
		 * longer than the limit: what a number prints (1e-1000 is 7 bytes
		 * of JSON, 1,002 printed) is never kept or printed further.
		 */
		while (w.text_len <= w.max_text &&
			   (tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
		{
			WalkKind	k = depth >= 1 && depth < (int) lengthof(kinds) ? kinds[depth] : WALK_OTHER;

			if ((tok == WJB_BEGIN_ARRAY || tok == WJB_BEGIN_OBJECT ||
				 tok == WJB_KEY || tok == WJB_ELEM) && !w.first)
				w.text_len += 2;
			w.first = (tok == WJB_BEGIN_ARRAY || tok == WJB_BEGIN_OBJECT || tok == WJB_KEY);
			switch (tok)
			{
				case WJB_BEGIN_ARRAY:
				case WJB_BEGIN_OBJECT:
					w.text_len += 1;
					depth++;
					maxdepth = Max(maxdepth, depth);
					if (depth < (int) lengthof(kinds))
						kinds[depth] = walk_container(&w, k, depth, tok, &v);
					break;
				case WJB_END_ARRAY:
				case WJB_END_OBJECT:
					w.text_len += 1;
					if (k == WALK_ENTRY && !w.failed)
						walk_entry_end(&w);
					depth--;
					break;
				case WJB_KEY:
					w.text_len += walk_string_len(v.val.string.val, v.val.string.len) + 2;
					walk_key(&w, k, &v);
					break;
				case WJB_VALUE:
				case WJB_ELEM:
					walk_scalar(&w, k, tok, &v);
					break;
				default:
					elog(ERROR, "unexpected jsonb iterator token %d", (int) tok);
			}
		}
	}

	/* 1. the length (the text parser's first check) */
	if (w.text_len > w.max_text)
	{
		snprintf(detail, sizeof(detail), KZ_PULL_D_TOO_LARGE,
				 w.max_text, KZ_PULL_TEXT_PER_BUCKET, w.max_buckets);
		*rc = kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER, detail, KZ_PULL_M_TOO_LARGE);
		out->nbuckets = 0;
		out->buckets = NULL;
		return true;
	}
	/* the text parser reads a text in another encoding (no more than the limit) */
	if (GetDatabaseEncoding() != PG_UTF8)
		return false;
	if (maxdepth > KZ_PULL_MAX_DEPTH)
		*rc = kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
						   KZ_PULL_D_DEPTH,
						   KZ_PULL_M_DEPTH);
	else if (w.overflow)
		*rc = kz_req_error(err, KZ_SQLSTATE_NUMERIC_RANGE,
						   KZ_PULL_D_RANGE,
						   KZ_PULL_M_RANGE);
	else
		*rc = w.failed ? -1 : 0;
	if (*rc != 0)
	{
		out->nbuckets = 0;
		out->buckets = NULL;
	}
	return true;
}
