/*-------------------------------------------------------------------------
 *
 * request_pull.c
 *	  Parse and validate the "buckets" argument of kizunasync.pull (see
 *	  request_pull.h).  Plain C and jansson only: no backend headers.
 *
 *	  Every limit is checked before the work it bounds: the text length
 *	  and the nesting depth before jansson builds anything, the entry count
 *	  before entries are copied, the param count before params are copied.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "request_pull.h"

/*
 * Depth of the deepest array/object nesting in a JSON text, scanning no
 * further than needed to exceed limit.  Returns limit + 1 as soon as the
 * limit is passed.  Strings are skipped (brackets inside them do not count).
 */
static int
json_text_depth(const char *text, size_t len, int limit)
{
	int			depth = 0;
	int			max = 0;
	int			in_string = 0;
	size_t		i;

	for (i = 0; i < len; i++)
	{
		char		c = text[i];

		if (in_string)
		{
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
			continue;
		}
		if (c == '"')
			in_string = 1;
		else if (c == '[' || c == '{')
		{
			if (++depth > max)
			{
				max = depth;
				if (max > limit)
					return limit + 1;
			}
		}
		else if ((c == ']' || c == '}') && depth > 0)
			depth--;
	}
	return max;
}

static char *
copy_string(KzAllocFn alloc_fn, const char *s, size_t len)
{
	char	   *p = alloc_fn(len + 1);

	if (p == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* Parse one params object into b; returns 0 or -1 with *err set. */
static int
parse_params(json_t *params, int idx, KzAllocFn alloc_fn, KzPullBucket *b,
			 KzReqError *err)
{
	const char *key;
	json_t	   *val;
	size_t		n = json_object_size(params);
	int			i = 0;

	if (n > KZ_PULL_MAX_PARAMS)
		return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
							KZ_PULL_D_PARAMS_COUNT,
							KZ_PULL_M_PARAMS_COUNT,
							idx, n, KZ_PULL_MAX_PARAMS);
	b->nparams = 0;
	b->params = NULL;
	if (n == 0)
		return 0;
	b->params = alloc_fn(n * sizeof(KzPullParam));
	if (b->params == NULL)
		return kz_req_error(err, KZ_SQLSTATE_OUT_OF_MEMORY, NULL, "out of memory");

	json_object_foreach(params, key, val)
	{
		KzPullParam *p = &b->params[i];
		size_t		keylen = strlen(key);
		char		shown[KZ_QUOTE_SIZE];

		kz_quote(shown, key, keylen, false);
		if (keylen == 0 || keylen > KZ_PULL_MAX_NAME)
			return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
								KZ_PULL_D_PARAM_NAME,
								KZ_PULL_M_PARAM_NAME,
								idx, shown);
		p->name = copy_string(alloc_fn, key, keylen);
		if (p->name == NULL)
			return kz_req_error(err, KZ_SQLSTATE_OUT_OF_MEMORY, NULL, "out of memory");

		switch (json_typeof(val))
		{
			case JSON_NULL:
				p->kind = KZ_PARAM_NULL;
				p->text = NULL;
				break;
			case JSON_TRUE:
			case JSON_FALSE:
				p->kind = KZ_PARAM_BOOL;
				p->text = copy_string(alloc_fn, json_is_true(val) ? "true" : "false",
									  json_is_true(val) ? 4 : 5);
				if (p->text == NULL)
					return kz_req_error(err, KZ_SQLSTATE_OUT_OF_MEMORY, NULL, "out of memory");
				break;
			case JSON_INTEGER:
				{
					char		buf[32];
					int			blen;

					blen = snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT,
									json_integer_value(val));
					p->kind = KZ_PARAM_INTEGER;
					p->text = copy_string(alloc_fn, buf, (size_t) blen);
					if (p->text == NULL)
						return kz_req_error(err, KZ_SQLSTATE_OUT_OF_MEMORY, NULL, "out of memory");
					break;
				}
			case JSON_STRING:
				{
					size_t		vlen = json_string_length(val);

					if (vlen > KZ_PULL_MAX_VALUE)
						return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
											KZ_PULL_D_VALUE_LONG,
											KZ_PULL_M_VALUE_LONG,
											idx, shown);
					p->kind = KZ_PARAM_STRING;
					p->text = copy_string(alloc_fn, json_string_value(val), vlen);
					if (p->text == NULL)
						return kz_req_error(err, KZ_SQLSTATE_OUT_OF_MEMORY, NULL, "out of memory");
					break;
				}
			default:
				return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
									KZ_PULL_D_VALUE_TYPE,
									KZ_PULL_M_VALUE_TYPE,
									idx, shown);
		}
		b->nparams = ++i;
	}
	return 0;
}

/* Parse one bucket entry into b; returns 0 or -1 with *err set. */
static int
parse_entry(json_t *entry, int idx, KzAllocFn alloc_fn, KzPullBucket *b,
			KzReqError *err)
{
	const char *key;
	json_t	   *val;
	json_t	   *table = NULL;
	json_t	   *params = NULL;
	size_t		tlen;

	if (!json_is_object(entry))
		return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
							KZ_PULL_D_ENTRY,
							KZ_PULL_M_ENTRY_OBJECT, idx);

	json_object_foreach(entry, key, val)
	{
		if (strcmp(key, "table") == 0)
			table = val;
		else if (strcmp(key, "params") == 0)
			params = val;
		else
		{
			char		shown[KZ_QUOTE_SIZE];

			kz_quote(shown, key, strlen(key), false);
			return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
								KZ_PULL_D_ENTRY_KEYS,
								KZ_PULL_M_UNKNOWN_KEY,
								idx, shown);
		}
	}

	if (table == NULL || !json_is_string(table))
		return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
							KZ_PULL_D_TABLE_STRING,
							KZ_PULL_M_NO_TABLE, idx);
	tlen = json_string_length(table);
	if (tlen == 0 || tlen > KZ_PULL_MAX_NAME)
		return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
							KZ_PULL_D_TABLE_NAME,
							KZ_PULL_M_TABLE_NAME, idx);
	b->table = copy_string(alloc_fn, json_string_value(table), tlen);
	if (b->table == NULL)
		return kz_req_error(err, KZ_SQLSTATE_OUT_OF_MEMORY, NULL, "out of memory");

	b->nparams = 0;
	b->params = NULL;
	if (params == NULL)
		return 0;				/* a missing params object means {} */
	if (!json_is_object(params))
		return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
							KZ_PULL_D_PARAMS_OBJECT,
							KZ_PULL_M_PARAMS_OBJECT, idx);
	return parse_params(params, idx, alloc_fn, b, err);
}

size_t
kz_pull_max_text(int max_buckets)
{
	size_t		n = (size_t) (max_buckets < 1 ? 1 : max_buckets) * KZ_PULL_TEXT_PER_BUCKET;

	return n < KZ_PULL_MIN_TEXT ? KZ_PULL_MIN_TEXT : n;
}

int
kz_pull_request_parse(const char *text, size_t len, int max_buckets, KzAllocFn alloc_fn,
					  KzPullRequest *out, KzReqError *err)
{
	json_t	   *root;
	json_error_t jerr;
	size_t		n;
	size_t		i;
	int			rc = 0;
	char		detail[sizeof(err->detail)];

	out->nbuckets = 0;
	out->buckets = NULL;

	if (max_buckets < 1)
		max_buckets = 1;
	if (max_buckets > KZ_PULL_MAX_BUCKETS_LIMIT)
		max_buckets = KZ_PULL_MAX_BUCKETS_LIMIT;
	if (len > kz_pull_max_text(max_buckets))
	{
		snprintf(detail, sizeof(detail), KZ_PULL_D_TOO_LARGE,
				 kz_pull_max_text(max_buckets), KZ_PULL_TEXT_PER_BUCKET, max_buckets);
		return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER, detail, KZ_PULL_M_TOO_LARGE);
	}
	if (json_text_depth(text, len, KZ_PULL_MAX_DEPTH) > KZ_PULL_MAX_DEPTH)
		return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
							KZ_PULL_D_DEPTH,
							KZ_PULL_M_DEPTH);

	root = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL && json_error_code(&jerr) == json_error_numeric_overflow)
		return kz_req_error(err, KZ_SQLSTATE_NUMERIC_RANGE,
							KZ_PULL_D_RANGE,
							KZ_PULL_M_RANGE);
	if (root == NULL)
	{
		char		q[KZ_QUOTE_SIZE];

		snprintf(detail, sizeof(detail), "The JSON parser stopped at character %d: %s.",
				 jerr.position, kz_quote(q, jerr.text, strlen(jerr.text), false));
		return kz_req_error(err, KZ_SQLSTATE_INVALID_TEXT, detail,
							"buckets is not valid JSON");
	}

	if (!json_is_array(root))
	{
		json_decref(root);
		return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
							KZ_PULL_D_ARRAY,
							KZ_PULL_M_ARRAY);
	}
	n = json_array_size(root);
	if (n > (size_t) max_buckets)
	{
		json_decref(root);
		snprintf(detail, sizeof(detail),
				 KZ_PULL_D_TOO_MANY, n);
		return kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER, detail,
							KZ_PULL_M_TOO_MANY, max_buckets);
	}
	if (n > 0)
	{
		out->buckets = alloc_fn(n * sizeof(KzPullBucket));
		if (out->buckets == NULL)
		{
			json_decref(root);
			return kz_req_error(err, KZ_SQLSTATE_OUT_OF_MEMORY, NULL, "out of memory");
		}
	}
	for (i = 0; i < n && rc == 0; i++)
	{
		rc = parse_entry(json_array_get(root, i), (int) i, alloc_fn,
						 &out->buckets[i], err);
		if (rc == 0)
			out->nbuckets = (int) i + 1;
	}
	json_decref(root);
	if (rc != 0)
	{
		out->nbuckets = 0;
		out->buckets = NULL;
	}
	return rc;
}
