/*-------------------------------------------------------------------------
 *
 * bucketlabel.h
 *	  Bucket labels: the text a bucket value is recorded under (changelog,
 *	  tombstones, bucket grants) and looked up by (a pull's param), and
 *	  the bucket column types sync_table accepts (decisions/0013).
 *
 *	  A pull delivers a row to a bucket param when the row's value, as
 *	  to_jsonb renders it, equals the param's rendering under jsonb
 *	  equality (kz_scope_matches: numbers by value, strings byte for byte).
 *	  The label is a canonical form of that rendering, so that two values
 *	  get one label exactly when that test calls them equal: numbers in
 *	  their shortest exact decimal (1, 1.0 and 1.00 are "1"; -0 is "0"),
 *	  containers as canonical JSON text, strings as themselves - except
 *	  for types whose values render as JSON of more than one kind (json,
 *	  jsonb, a type rendered by a cast to json), whose labels are canonical
 *	  JSON text throughout (the string "1" is "\"1\"", the number 1 is
 *	  "1").  The rendering itself is made under the pinned settings
 *	  (kz_render_settings_begin), which fixes TimeZone, DateStyle,
 *	  IntervalStyle, extra_float_digits and bytea_output; a type whose
 *	  rendering depends on anything else is refused as a bucket column.
 *
 *	  Nothing here runs a type's input or output function, a cast or a
 *	  domain check: it reads jsonb, built-in numerics and the catalog only,
 *	  so it may run in a privileged section.  Implemented in
 *	  src/bucketlabel.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_BUCKETLABEL_H
#define KZ_BUCKETLABEL_H

#include "utils/jsonb.h"

/* How values of a bucket column's type render (to_jsonb) at the top level. */
typedef enum KzLabelKind
{
	KZ_LABEL_STRING,			/* always a string */
	KZ_LABEL_NUMBER,			/* a number, or "NaN"/"Infinity"/"-Infinity" */
	KZ_LABEL_BOOL,				/* true or false */
	KZ_LABEL_CONTAINER,			/* an array (arrays) or an object (composites) */
	KZ_LABEL_JSON				/* any kind: json, jsonb, a cast to json */
} KzLabelKind;

/* The kind of a bucket column's type (domains resolved). */
extern KzLabelKind kz_label_kind(Oid typid);

/*
 * The label of a rendered value (to_jsonb of a value of a type of the given
 * kind); NULL for JSON null (such a value is never delivered).
 */
extern char *kz_label_of(Jsonb *rendered, KzLabelKind kind);

/*
 * A rendering whose label is label (the inverse of kz_label_of up to jsonb
 * equality): what a tombstone's bucket snapshot holds when only the label
 * is known.
 */
extern Jsonb *kz_label_value(const char *label, KzLabelKind kind);

/*
 * InvalidOid when a column of type typid may be a bucket column; else the
 * type (typid itself, or a type it is built from) whose rendering depends
 * on more than the value and the pinned settings, and in *why the
 * setting it depends on.
 */
extern Oid	kz_label_refused_type(Oid typid, const char **why);

/*
 * The label an entry recorded by 0.1.0 or an earlier 0.2.0 build (the
 * rendering's ->> text: strings unquoted, numbers as written) has now.
 * For kind KZ_LABEL_JSON such a label cannot always tell a string from
 * another JSON kind ("1" was the string "1" or the number 1): the result
 * is then the JSON reading, and *string_reading (else NULL) the label the
 * string would have.
 */
extern char *kz_label_upgrade(const char *old, KzLabelKind kind, char **string_reading);

#endif							/* KZ_BUCKETLABEL_H */
