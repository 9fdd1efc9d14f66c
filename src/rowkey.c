/*-------------------------------------------------------------------------
 *
 * rowkey.c
 *	  Row key text ("pk" on the wire): rendering and canonical parsing.
 *
 * The key types are uuid, text, varchar, smallint, integer and bigint, and
 * for each of them the component text that to_jsonb(row) ->> column gives
 * is exactly the type's output function: a lowercase hyphenated uuid, a
 * plain decimal, the string unchanged.  One key column: the pk is that
 * text.  Several: the jsonb text of an array of those texts as strings,
 * '["c1", "c2"]', escaped the way jsonb prints strings (escape_json).
 *
 * Parsing never raises an error for bad input: it checks the syntax itself
 * before handing a component to a type input function, so that the input
 * function cannot fail, and finally insists that the text re-renders to
 * the same bytes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/uuid.h"

#include "rowkey.h"

/* Component text of one key value (type is a base key type). */
static char *
rowkey_component(Oid type, Datum value)
{
	switch (type)
	{
		case TEXTOID:
		case VARCHAROID:
			return TextDatumGetCString(value);
		case UUIDOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
			{
				Oid			outfn;
				bool		isvarlena;

				getTypeOutputInfo(type, &outfn, &isvarlena);
				return OidOutputFunctionCall(outfn, value);
			}
		default:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("key column has type %s, which no row key may have",
							format_type_be(type))));
	}
	return NULL;				/* keep compiler quiet */
}

char *
kz_rowkey_render(const KzTableConf *conf, const Datum *values, const bool *isnull)
{
	StringInfoData buf;
	int			i;

	for (i = 0; i < conf->nkeys; i++)
	{
		if (isnull[i])
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("key column \"%s\" of table \"%s\" is null",
							conf->key_columns[i], conf->table_name)));
	}

	if (conf->nkeys == 1)
		return rowkey_component(conf->key_types[0], values[0]);

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (i = 0; i < conf->nkeys; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		escape_json(&buf, rowkey_component(conf->key_types[i], values[i]));
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/* Canonical decimal of an integer type: -?(0|[1-9][0-9]*), within range. */
static bool
rowkey_int_ok(const char *s, Oid type)
{
	const char *p = s;
	int64		v = 0;
	bool		neg = false;
	int64		lo,
				hi;

	switch (type)
	{
		case INT2OID:
			lo = PG_INT16_MIN;
			hi = PG_INT16_MAX;
			break;
		case INT4OID:
			lo = PG_INT32_MIN;
			hi = PG_INT32_MAX;
			break;
		default:
			lo = PG_INT64_MIN;
			hi = PG_INT64_MAX;
			break;
	}

	if (*p == '-')
	{
		neg = true;
		p++;
	}
	if (*p < '0' || *p > '9')
		return false;
	if (*p == '0' && (p[1] != '\0' || neg))
		return false;			/* leading zero, or "-0" */
	for (; *p; p++)
	{
		int			d;

		if (*p < '0' || *p > '9')
			return false;
		d = *p - '0';
		/* accumulate negatively so that INT64_MIN fits */
		if (v < (PG_INT64_MIN + d) / 10)
			return false;
		v = v * 10 - d;
		if (p - s > 20)
			return false;
	}
	if (!neg)
	{
		if (v < -hi)
			return false;
		v = -v;
	}
	return v >= lo && v <= hi;
}

/* Canonical uuid text: 36 chars, lowercase hex, hyphens at 8, 13, 18, 23. */
static bool
rowkey_uuid_ok(const char *s)
{
	int			i;

	if (strlen(s) != 36)
		return false;
	for (i = 0; i < 36; i++)
	{
		char		c = s[i];

		if (i == 8 || i == 13 || i == 18 || i == 23)
		{
			if (c != '-')
				return false;
		}
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

/* Convert one component text to a Datum of the key type, or false. */
static bool
rowkey_component_parse(Oid type, const char *s, Datum *value)
{
	switch (type)
	{
		case TEXTOID:
		case VARCHAROID:
			*value = CStringGetTextDatum(s);
			return true;
		case UUIDOID:
			if (!rowkey_uuid_ok(s))
				return false;
			*value = DirectFunctionCall1(uuid_in, CStringGetDatum(s));
			return true;
		case INT2OID:
			if (!rowkey_int_ok(s, type))
				return false;
			*value = Int16GetDatum((int16) strtol(s, NULL, 10));
			return true;
		case INT4OID:
			if (!rowkey_int_ok(s, type))
				return false;
			*value = Int32GetDatum((int32) strtol(s, NULL, 10));
			return true;
		case INT8OID:
			if (!rowkey_int_ok(s, type))
				return false;
			*value = Int64GetDatum((int64) strtoll(s, NULL, 10));
			return true;
		default:
			return false;
	}
}

/*
 * Decode one JSON string starting at *pp (at the opening quote).  Accepts
 * only the escapes escape_json produces; the final re-render check catches
 * every other non-canonical spelling.
 */
static bool
rowkey_json_string(const char **pp, StringInfo out)
{
	const char *p = *pp;

	if (*p != '"')
		return false;
	p++;
	for (;;)
	{
		unsigned char c = (unsigned char) *p;

		if (c == '\0' || c < 0x20)
			return false;
		if (c == '"')
			break;
		if (c != '\\')
		{
			appendStringInfoChar(out, (char) c);
			p++;
			continue;
		}
		p++;
		switch (*p)
		{
			case '"':
				appendStringInfoChar(out, '"');
				break;
			case '\\':
				appendStringInfoChar(out, '\\');
				break;
			case 'b':
				appendStringInfoChar(out, '\b');
				break;
			case 'f':
				appendStringInfoChar(out, '\f');
				break;
			case 'n':
				appendStringInfoChar(out, '\n');
				break;
			case 'r':
				appendStringInfoChar(out, '\r');
				break;
			case 't':
				appendStringInfoChar(out, '\t');
				break;
			case 'u':
				{
					int			v = 0;
					int			i;

					for (i = 1; i <= 4; i++)
					{
						char		h = p[i];

						if (h >= '0' && h <= '9')
							v = v * 16 + (h - '0');
						else if (h >= 'a' && h <= 'f')
							v = v * 16 + (h - 'a' + 10);
						else
							return false;
					}
					/* escape_json writes \u only for other control characters */
					if (v == 0 || v >= 0x20)
						return false;
					appendStringInfoChar(out, (char) v);
					p += 4;
				}
				break;
			default:
				return false;
		}
		p++;
	}
	*pp = p + 1;
	return true;
}

bool
kz_rowkey_parse(const KzTableConf *conf, const char *pk, Datum *values)
{
	const char *p = pk;
	StringInfoData comp;
	Datum	   *tmp;
	bool	   *nulls;
	char	   *again;
	int			i;

	if (pk == NULL)
		return false;

	if (conf->nkeys == 1)
	{
		if (!rowkey_component_parse(conf->key_types[0], pk, &values[0]))
			return false;
	}
	else
	{
		if (*p++ != '[')
			return false;
		initStringInfo(&comp);
		for (i = 0; i < conf->nkeys; i++)
		{
			if (i > 0)
			{
				if (p[0] != ',' || p[1] != ' ')
					return false;
				p += 2;
			}
			resetStringInfo(&comp);
			if (!rowkey_json_string(&p, &comp))
				return false;
			if (strlen(comp.data) != (size_t) comp.len)
				return false;
			if (!rowkey_component_parse(conf->key_types[i], comp.data, &values[i]))
				return false;
		}
		if (p[0] != ']' || p[1] != '\0')
			return false;
	}

	/* the text must be exactly what rendering these values gives */
	tmp = palloc(sizeof(Datum) * conf->nkeys);
	nulls = palloc0(sizeof(bool) * conf->nkeys);
	memcpy(tmp, values, sizeof(Datum) * conf->nkeys);
	again = kz_rowkey_render(conf, tmp, nulls);
	return strcmp(again, pk) == 0;
}

/*
 * A key is its text, byte for byte (entry_key.c): refuse (0A000) a primary
 * key column of rel, or its index, with a nondeterministic collation, which
 * would let two texts ('Bob', 'BOB') name one row, and a push of the one
 * pass a tombstone of the other.
 */
void
kz_rowkey_check_collations(Relation rel)
{
	Oid			pkidx = RelationGetPrimaryKeyIndex(rel);
	Relation	idx = OidIsValid(pkidx) ? index_open(pkidx, AccessShareLock) : NULL;
	int			i;

	for (i = 0; idx != NULL && i < IndexRelationGetNumberOfKeyAttributes(idx); i++)
	{
		AttrNumber	att = idx->rd_index->indkey.values[i];
		Oid			typ,
					coll;
		int32		typmod;

		get_atttypetypmodcoll(RelationGetRelid(rel), att, &typ, &typmod, &coll);
		if ((OidIsValid(coll) && !get_collation_isdeterministic(coll)) ||
			(OidIsValid(idx->rd_indcollation[i]) &&
			 !get_collation_isdeterministic(idx->rd_indcollation[i])))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("key column \"%s\" has a nondeterministic collation",
							get_attname(RelationGetRelid(rel), att, false)),
					 errdetail("Row keys are compared byte for byte; a nondeterministic collation lets two keys name one row."),
					 errhint("Give the key column and its primary key a deterministic collation, such as \"C\" or the default.")));
	}
	if (idx != NULL)
		index_close(idx, AccessShareLock);
}
