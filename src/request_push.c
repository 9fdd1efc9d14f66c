/*-------------------------------------------------------------------------
 *
 * request_push.c
 *	  Push batch parsing and validation (see request_push.h).  Plain C.
 *
 *	  Shape errors are 22023 with the message
 *	  "mutation <n> of the batch is malformed: <problem>";
 *	  envelope errors are 22023 "batch ...".
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "request_push.h"

static bool mutation_error(KzReqError *err, int n, const char *sqlstate, const char *detail,
						   const char *fmt,...) KZ_PRINTF_ATTR(5, 6);

/* Shape error of mutation n (1-based). */
static bool
mutation_error(KzReqError *err, int n, const char *sqlstate, const char *detail,
			   const char *fmt,...)
{
	char		problem[sizeof(err->message) - 64];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(problem, sizeof(problem), fmt, ap);
	va_end(ap);
	kz_req_error(err, sqlstate, detail,
				 "mutation %d of the batch is malformed: %s", n, problem);
	return false;
}

const char *
kz_op_name(KzOp op)
{
	switch (op)
	{
		case KZ_OP_INSERT:
			return "insert";
		case KZ_OP_UPDATE:
			return "update";
		case KZ_OP_DELETE:
			return "delete";
	}
	return "?";
}

const char *
kz_transform_op_name(KzTransformOp op)
{
	switch (op)
	{
		case KZ_TF_INCREMENT:
			return "increment";
		case KZ_TF_ARRAY_UNION:
			return "arrayUnion";
		case KZ_TF_ARRAY_REMOVE:
			return "arrayRemove";
	}
	return "?";
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
kz_uuid_text_canonical(const char *s, char out[37])
{
	int			i;

	if (strlen(s) != 36)
		return false;
	for (i = 0; i < 36; i++)
	{
		if (i == 8 || i == 13 || i == 18 || i == 23)
		{
			if (s[i] != '-')
				return false;
			out[i] = '-';
		}
		else
		{
			if (hexval(s[i]) < 0)
				return false;
			out[i] = (s[i] >= 'A' && s[i] <= 'F') ? (char) (s[i] - 'A' + 'a') : s[i];
		}
	}
	out[36] = '\0';
	return true;
}

/* A JSON string's bytes are a valid name: 1..63 bytes, no NUL. */
static bool
valid_name(json_t *v)
{
	size_t		len;

	if (!json_is_string(v))
		return false;
	len = json_string_length(v);
	return len >= 1 && len <= KZ_PUSH_MAX_NAME_BYTES && strlen(json_string_value(v)) == len;
}

/* A string without embedded NUL (PostgreSQL text cannot hold one). */
static bool
nul_free(json_t *v)
{
	return strlen(json_string_value(v)) == json_string_length(v);
}

/*
 * Check one column value (or precondition value) against the size limits:
 * string length, array length, nesting depth, NUL bytes.  Returns a problem
 * text or NULL.
 */
static const char *
check_value(json_t *v, int depth)
{
	if (depth > KZ_PUSH_MAX_DEPTH)
		return "nests deeper than 32 levels";
	switch (json_typeof(v))
	{
		case JSON_STRING:
			if (json_string_length(v) > KZ_PUSH_MAX_STRING_BYTES)
				return "is a string longer than 1048576 bytes";
			if (!nul_free(v))
				return "is a string containing a NUL character";
			return NULL;
		case JSON_ARRAY:
			{
				size_t		i;
				json_t	   *e;

				if (json_array_size(v) > KZ_PUSH_MAX_ARRAY_ITEMS)
					return "is an array of more than 10000 elements";
				json_array_foreach(v, i, e)
				{
					const char *p = check_value(e, depth + 1);

					if (p)
						return p;
				}
				return NULL;
			}
		case JSON_OBJECT:
			{
				const char *k;
				json_t	   *e;

				if (json_object_size(v) > KZ_PUSH_MAX_ARRAY_ITEMS)
					return "is an object of more than 10000 members";
				json_object_foreach(v, k, e)
				{
					const char *p;

					if (strlen(k) > KZ_PUSH_MAX_STRING_BYTES)
						return "has a key longer than 1048576 bytes";
					p = check_value(e, depth + 1);
					if (p)
						return p;
				}
				return NULL;
			}
		default:
			return NULL;
	}
}

static bool
numeric_text(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.')
	{
		p++;
		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0';
}

/* HLC wire grammar: YYYY-MM-DDTHH:MM:SS.mmmZ|<counter>|<node>. */
static bool
hlc_wire_ok(const char *s, size_t len)
{
	static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ|";
	size_t		i;
	size_t		ndigits = 0;

	if (len > KZ_PUSH_MAX_HLC_BYTES || strlen(s) != len || len < sizeof(pat) - 1)
		return false;
	for (i = 0; i < sizeof(pat) - 1; i++)
	{
		if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
			return false;
	}
	while (i < len && s[i] >= '0' && s[i] <= '9')
	{
		i++;
		ndigits++;
	}
	/* counter: 1..18 digits (fits int64), then '|' and a non-empty node */
	if (ndigits < 1 || ndigits > 18 || i >= len || s[i] != '|' || i + 1 >= len)
		return false;
	return true;
}

bool
kz_push_parse(const char *text, size_t len, KzAllocFn alloc, void *alloc_arg,
			  KzPushReq *req, KzReqError *err)
{
	json_error_t jerr;
	json_t	   *root;
	json_t	   *muts;
	json_t	   *v;
	const char *key;
	size_t		i;

	memset(req, 0, sizeof(*req));
	if (len > KZ_PUSH_MAX_BODY_BYTES)
	{
		kz_req_error(err, KZ_SQLSTATE_PROGRAM_LIMIT, "The limit is 16777216 bytes of batch text.",
					 "batch is larger than the request size limit");
		return false;
	}
	/*
	 * JSON_DECODE_ANY: a top-level scalar is valid JSON and is refused below
	 * as "not a JSON object".  Numbers beyond a double's range and nesting
	 * beyond jansson's parser depth (2048) get their own errors: both are
	 * limits (decisions/0031), not syntax errors.
	 */
	root = json_loadb(text, len,
					  JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL,
					  &jerr);
	if (root == NULL && json_error_code(&jerr) == json_error_numeric_overflow)
	{
		kz_req_error(err, KZ_SQLSTATE_NUMERIC_RANGE,
					 "JSON numbers must lie within the range of a double (about 1.7e308); send larger values as strings.",
					 "a number in batch is out of range");
		return false;
	}
	if (root == NULL && json_error_code(&jerr) == json_error_stack_overflow)
	{
		kz_req_error(err, KZ_SQLSTATE_PROGRAM_LIMIT,
					 "A column value may nest at most 32 levels.",
					 "batch is nested too deeply");
		return false;
	}
	if (root == NULL)
	{
		char		detail[sizeof(err->detail)];
		char		q[KZ_QUOTE_SIZE];

		snprintf(detail, sizeof(detail), "The JSON parser stopped at character %d: %s.",
				 jerr.position, kz_quote(q, jerr.text, strlen(jerr.text), false));
		kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER, detail,
					 "batch is not valid JSON");
		return false;
	}
	req->root = root;
	if (!json_is_object(root))
	{
		kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
					 "batch is not a JSON object");
		return false;
	}
	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "atomic") != 0 && strcmp(key, "mutations") != 0)
		{
			char		q[KZ_QUOTE_SIZE];

			kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER,
						 "A batch has only the keys \"atomic\" and \"mutations\".",
						 "batch has an unknown key %s", kz_quote(q, key, strlen(key), false));
			return false;
		}
	}
	v = json_object_get(root, "atomic");
	if (v == NULL || json_is_null(v))
		req->atomic = false;
	else if (json_is_boolean(v))
		req->atomic = json_is_true(v);
	else
	{
		kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
					 "batch \"atomic\" is not a boolean");
		return false;
	}
	muts = json_object_get(root, "mutations");
	if (muts == NULL || json_is_null(muts))
		return true;
	if (!json_is_array(muts))
	{
		kz_req_error(err, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
					 "batch \"mutations\" is not an array");
		return false;
	}
	req->nmutations = (int) json_array_size(muts);
	if (json_array_size(muts) > KZ_PUSH_HARD_MAX_MUTATIONS)
		return true;			/* the caller refuses it by count */

	req->tables = alloc(alloc_arg, sizeof(char *) * (req->nmutations + 1));
	json_array_foreach(muts, i, v)
	{
		json_t	   *t = json_is_object(v) ? json_object_get(v, "table") : NULL;
		int			j;

		if (t == NULL || !valid_name(t))
			continue;
		for (j = 0; j < req->ntables; j++)
			if (strcmp(req->tables[j], json_string_value(t)) == 0)
				break;
		if (j == req->ntables)
			req->tables[req->ntables++] = json_string_value(t);
	}
	return true;
}

static bool
validate_transforms(KzMutationReq *m, json_t *tf, int n, KzAllocFn alloc, void *alloc_arg,
					KzReqError *err)
{
	const char *col;
	json_t	   *t;

	if (json_object_size(tf) > KZ_PUSH_MAX_TRANSFORMS)
		return mutation_error(err, n, KZ_SQLSTATE_PROGRAM_LIMIT, NULL,
							  "transforms has more than 1600 entries");
	m->transforms = alloc(alloc_arg, sizeof(KzTransformReq) * (json_object_size(tf) + 1));
	json_object_foreach(tf, col, t)
	{
		KzTransformReq *x = &m->transforms[m->ntransforms];
		json_t	   *op;
		const char *opname;
		const char *k;
		json_t	   *e;
		int			c;
		char		qcol[KZ_QUOTE_SIZE];

		if (strlen(col) == 0 || strlen(col) > KZ_PUSH_MAX_NAME_BYTES)
			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
								  "transforms names a column that is not a valid name");
		kz_quote(qcol, col, strlen(col), false);
		for (c = 0; c < m->ncolumns; c++)
			if (strcmp(m->columns[c], col) == 0)
				return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER,
									  "A column is either assigned or transformed, not both.",
									  "column %s is in both columns and transforms", qcol);
		x->column = col;
		if (!json_is_object(t))
			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
								  "transform on %s is not an object", qcol);
		op = json_object_get(t, "op");
		opname = json_is_string(op) ? json_string_value(op) : "";
		if (strcmp(opname, "increment") == 0)
			x->op = KZ_TF_INCREMENT;
		else if (strcmp(opname, "arrayUnion") == 0)
			x->op = KZ_TF_ARRAY_UNION;
		else if (strcmp(opname, "arrayRemove") == 0)
			x->op = KZ_TF_ARRAY_REMOVE;
		else
			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
								  "transform on %s is not increment, arrayUnion, or arrayRemove",
								  qcol);
		json_object_foreach(t, k, e)
		{
			const char *want = x->op == KZ_TF_INCREMENT ? "by" : "values";

			if (strcmp(k, "op") != 0 && strcmp(k, want) != 0)
			{
				char		q[KZ_QUOTE_SIZE];

				return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
									  "%s on %s has an unknown key %s",
									  opname, qcol, kz_quote(q, k, strlen(k), false));
			}
		}
		if (x->op == KZ_TF_INCREMENT)
		{
			json_t	   *by = json_object_get(t, "by");

			if (!(json_is_number(by) ||
				  (json_is_string(by) && json_string_length(by) <= 1000 &&
				   nul_free(by) && numeric_text(json_string_value(by)))))
				return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
									  "increment on %s needs a numeric by", qcol);
		}
		else
		{
			json_t	   *vals = json_object_get(t, "values");
			size_t		i;

			if (!json_is_array(vals) || json_array_size(vals) == 0)
				return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
									  "%s on %s needs a non-empty values array", opname, qcol);
			if (json_array_size(vals) > KZ_PUSH_MAX_TRANSFORM_VALUES)
				return mutation_error(err, n, KZ_SQLSTATE_PROGRAM_LIMIT, NULL,
									  "%s on %s has more than 1000 values", opname, qcol);
			json_array_foreach(vals, i, e)
			{
				if (!(json_is_string(e) || json_is_number(e) || json_is_boolean(e)))
					return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
										  "%s on %s has a value that is not a string, number, or boolean",
										  opname, qcol);
				if (json_is_string(e) && check_value(e, 1) != NULL)
					return mutation_error(err, n, KZ_SQLSTATE_PROGRAM_LIMIT, NULL,
										  "%s on %s has a value %s", opname, qcol,
										  check_value(e, 1));
			}
			x->nvalues = (int) json_array_size(vals);
		}
		m->ntransforms++;
	}
	return true;
}

/* Collect the keys of a column map, checking names and value limits. */
static bool
collect_columns(json_t *obj, const char *what, int n, const char ***names, int *count,
				KzAllocFn alloc, void *alloc_arg, KzReqError *err)
{
	const char *k;
	json_t	   *v;

	if (json_object_size(obj) > KZ_PUSH_MAX_COLUMNS)
		return mutation_error(err, n, KZ_SQLSTATE_PROGRAM_LIMIT, NULL,
							  "%s has more than 1600 entries", what);
	*names = alloc(alloc_arg, sizeof(char *) * (json_object_size(obj) + 1));
	*count = 0;
	json_object_foreach(obj, k, v)
	{
		const char *p;

		if (strlen(k) == 0 || strlen(k) > KZ_PUSH_MAX_NAME_BYTES)
			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER,
								  "Column names are 1 to 63 bytes.",
								  "%s names a column that is not a valid name", what);
		p = check_value(v, 1);
		if (p)
		{
			char		q[KZ_QUOTE_SIZE];

			return mutation_error(err, n, KZ_SQLSTATE_PROGRAM_LIMIT, NULL,
								  "%s value of %s %s", what, kz_quote(q, k, strlen(k), false), p);
		}
		(*names)[(*count)++] = k;
	}
	return true;
}

static const char *const mutation_keys[] = {
	"mutation_id", "table", "pk", "op", "columns", "precondition", "transforms",
	"hlc", "base_hint", NULL
};

static bool
validate_mutation(json_t *m, int n, KzMutationReq *out, KzAllocFn alloc, void *alloc_arg,
				  KzReqError *err)
{
	json_t	   *v;
	const char *key;
	const char *s;

	if (!json_is_object(m))
		return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL, "is not an object");
	json_object_foreach(m, key, v)
	{
		int			i;

		for (i = 0; mutation_keys[i]; i++)
			if (strcmp(key, mutation_keys[i]) == 0)
				break;
		if (mutation_keys[i] == NULL)
		{
			char		q[KZ_QUOTE_SIZE];

			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER,
								  "A mutation has the keys mutation_id, table, pk, op, columns, precondition, transforms, hlc and base_hint.",
								  "unknown key %s", kz_quote(q, key, strlen(key), false));
		}
	}

	v = json_object_get(m, "mutation_id");
	if (!json_is_string(v) || !kz_uuid_text_canonical(json_string_value(v), out->mutation_id))
		return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL, "mutation_id is not a uuid");

	v = json_object_get(m, "op");
	s = json_is_string(v) ? json_string_value(v) : "";
	if (strcmp(s, "insert") == 0)
		out->op = KZ_OP_INSERT;
	else if (strcmp(s, "update") == 0)
		out->op = KZ_OP_UPDATE;
	else if (strcmp(s, "delete") == 0)
		out->op = KZ_OP_DELETE;
	else
		return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
							  "op is not insert, update, or delete");

	v = json_object_get(m, "table");
	if (!json_is_string(v))
		return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL, "table is not a string");
	if (!valid_name(v))
		return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
							  "table is not a name of 1 to 63 bytes");
	out->table = json_string_value(v);

	v = json_object_get(m, "pk");
	if (!json_is_string(v) || json_string_length(v) == 0)
		return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
							  "pk is not a non-empty string");
	if (json_string_length(v) > KZ_PUSH_MAX_PK_BYTES || !nul_free(v))
		return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
							  "pk is longer than 1024 bytes or contains a NUL character");
	out->pk = json_string_value(v);

	/* columns: an object (absent or null means {}) */
	v = json_object_get(m, "columns");
	if (v != NULL && !json_is_null(v))
	{
		if (!json_is_object(v))
			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
								  "columns is not an object");
		if (!collect_columns(v, "columns", n, &out->columns, &out->ncolumns,
							 alloc, alloc_arg, err))
			return false;
		if (out->op == KZ_OP_DELETE && out->ncolumns > 0)
			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
								  "columns ride only an insert or an update");
	}

	v = json_object_get(m, "precondition");
	if (v != NULL && !json_is_null(v))
	{
		if (!json_is_object(v))
			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
								  "precondition is not an object");
		out->has_precondition = true;
		if (!collect_columns(v, "precondition", n, &out->precond_columns, &out->nprecond,
							 alloc, alloc_arg, err))
			return false;
	}

	v = json_object_get(m, "transforms");
	if (v != NULL && !json_is_null(v))
	{
		if (!json_is_object(v))
			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
								  "transforms is not an object");
		if (out->op != KZ_OP_UPDATE && json_object_size(v) > 0)
			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER, NULL,
								  "transforms ride only an update");
		if (!validate_transforms(out, v, n, alloc, alloc_arg, err))
			return false;
	}

	v = json_object_get(m, "hlc");
	if (v != NULL && !json_is_null(v))
	{
		if (!json_is_string(v) || !hlc_wire_ok(json_string_value(v), json_string_length(v)))
			return mutation_error(err, n, KZ_SQLSTATE_INVALID_PARAMETER,
								  "An hlc is <YYYY-MM-DDTHH:MM:SS.mmmZ>|<counter>|<node>, at most 128 bytes.",
								  "hlc is not a hybrid logical clock string");
		out->hlc = json_string_value(v);
	}
	return true;
}

bool
kz_push_validate(KzPushReq *req, KzAllocFn alloc, void *alloc_arg, KzReqError *err)
{
	json_t	   *muts = json_object_get((json_t *) req->root, "mutations");
	size_t		i;
	json_t	   *m;

	if (req->nmutations == 0)
		return true;
	req->mutations = alloc(alloc_arg, sizeof(KzMutationReq) * req->nmutations);
	memset(req->mutations, 0, sizeof(KzMutationReq) * req->nmutations);
	json_array_foreach(muts, i, m)
	{
		if (!validate_mutation(m, (int) i + 1, &req->mutations[i], alloc, alloc_arg, err))
			return false;
	}
	return true;
}

void
kz_push_release(KzPushReq *req)
{
	if (req->root)
		json_decref((json_t *) req->root);
	req->root = NULL;
}
