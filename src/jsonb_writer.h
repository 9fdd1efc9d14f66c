/*-------------------------------------------------------------------------
 *
 * jsonb_writer.h
 *	  Write a jsonb value straight into its on-disk form, embedding existing
 *	  jsonb containers (rendered rows) byte for byte instead of unpacking them
 *	  into JsonbValues and encoding them again.  The caller gives container
 *	  sizes up front and object keys already in jsonb key order (shorter
 *	  first, then bytewise); the result is identical to what
 *	  JsonbValueToJsonb would produce for the same value.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_JSONB_WRITER_H
#define KZ_JSONB_WRITER_H

#include "lib/stringinfo.h"
#include "utils/jsonb.h"

#define KZ_JBW_MAX_DEPTH	8

typedef struct KzJbFrame
{
	int			base_offset;	/* buffer length before the container's padding */
	int			jentry_offset;	/* next JEntry slot to fill */
	int			index;			/* children written (keys, then values) */
	int			nchildren;		/* children expected */
	int			totallen;		/* child data bytes so far */
	int			nkeys;			/* object: keys still to be written before values */
} KzJbFrame;

typedef struct KzJbWriter
{
	StringInfoData buf;
	int			depth;
	KzJbFrame	stack[KZ_JBW_MAX_DEPTH];
} KzJbWriter;

extern void kz_jbw_init(KzJbWriter *w, int size_hint);
extern void kz_jbw_begin_object(KzJbWriter *w, int npairs, const char *const *keys);
extern void kz_jbw_begin_array(KzJbWriter *w, int nelems);
extern void kz_jbw_end(KzJbWriter *w);
extern void kz_jbw_string(KzJbWriter *w, const char *s, int len);
extern void kz_jbw_bool(KzJbWriter *w, bool b);
extern void kz_jbw_null(KzJbWriter *w);
extern void kz_jbw_jsonb(KzJbWriter *w, const Jsonb *j);
extern Jsonb *kz_jbw_finish(KzJbWriter *w);

#endif							/* KZ_JSONB_WRITER_H */
