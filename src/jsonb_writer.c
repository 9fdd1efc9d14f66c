/*-------------------------------------------------------------------------
 *
 * jsonb_writer.c
 *	  A streaming writer of jsonb's binary form (see jsonb_writer.h).
 *
 *	  The layout follows src/backend/utils/adt/jsonb_util.c: a container is
 *	  a uint32 header (count | JB_FOBJECT or JB_FARRAY), one JEntry per child
 *	  (for an object: every key, then every value), then the children's data.
 *	  A JEntry holds the child's type and its data length, or, for every
 *	  JB_OFFSET_STRIDE-th child, the end offset of its data (JENTRY_HAS_OFF).
 *	  Nested containers and numerics are aligned to 4 bytes relative to the
 *	  start of the varlena, the padding counting as part of the child.  A
 *	  container's offsets are relative to its own data, so an existing
 *	  container can be copied verbatim after padding.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "jsonb_writer.h"

static void
pad_to_int(StringInfo buf)
{
	int			pad = INTALIGN(buf->len) - buf->len;

	if (pad > 0)
	{
		enlargeStringInfo(buf, pad);
		memset(buf->data + buf->len, 0, pad);
		buf->len += pad;
	}
}

static int
reserve(StringInfo buf, int len)
{
	int			off = buf->len;

	enlargeStringInfo(buf, len);
	buf->len += len;
	return off;
}

/* Record a finished child of the innermost container. */
static void
child_done(KzJbWriter *w, JEntry meta)
{
	KzJbFrame  *f = &w->stack[w->depth - 1];

	Assert(w->depth > 0 && f->index < f->nchildren);
	f->totallen += JBE_OFFLENFLD(meta);
	if (f->totallen > JENTRY_OFFLENMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("total size of jsonb object elements exceeds the maximum of %u bytes",
						JENTRY_OFFLENMASK)));
	if ((f->index % JB_OFFSET_STRIDE) == 0)
		meta = (meta & JENTRY_TYPEMASK) | f->totallen | JENTRY_HAS_OFF;
	memcpy(w->buf.data + f->jentry_offset, &meta, sizeof(JEntry));
	f->jentry_offset += sizeof(JEntry);
	f->index++;
}

void
kz_jbw_init(KzJbWriter *w, int size_hint)
{
	initStringInfo(&w->buf);
	if (size_hint > w->buf.maxlen)
		enlargeStringInfo(&w->buf, size_hint);
	reserve(&w->buf, VARHDRSZ);
	w->depth = 0;
}

static void
begin_container(KzJbWriter *w, int count, uint32 flag, int nchildren)
{
	KzJbFrame  *f;
	uint32		header = (uint32) count | flag;

	if (w->depth >= KZ_JBW_MAX_DEPTH)
		elog(ERROR, "jsonb writer nested too deep");
	if (count > JB_CMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("jsonb container has too many elements")));
	f = &w->stack[w->depth++];
	f->base_offset = w->buf.len;
	pad_to_int(&w->buf);
	appendBinaryStringInfo(&w->buf, (char *) &header, sizeof(uint32));
	f->jentry_offset = reserve(&w->buf, sizeof(JEntry) * nchildren);
	f->index = 0;
	f->nchildren = nchildren;
	f->totallen = 0;
	f->nkeys = 0;
}

void
kz_jbw_begin_object(KzJbWriter *w, int npairs, const char *const *keys)
{
	int			i;

	begin_container(w, npairs, JB_FOBJECT, npairs * 2);
	for (i = 0; i < npairs; i++)
	{
		int			len = strlen(keys[i]);

		Assert(i == 0 || strlen(keys[i - 1]) < len ||
			   (strlen(keys[i - 1]) == len && memcmp(keys[i - 1], keys[i], len) < 0));
		appendBinaryStringInfo(&w->buf, keys[i], len);
		child_done(w, (JEntry) len);
	}
}

void
kz_jbw_begin_array(KzJbWriter *w, int nelems)
{
	begin_container(w, nelems, JB_FARRAY, nelems);
}

void
kz_jbw_end(KzJbWriter *w)
{
	KzJbFrame  *f = &w->stack[w->depth - 1];
	int			totallen;

	if (f->index != f->nchildren)
		elog(ERROR, "jsonb writer container has %d of %d children",
			 f->index, f->nchildren);
	totallen = w->buf.len - f->base_offset;
	w->depth--;
	if (totallen > JENTRY_OFFLENMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("total size of jsonb array elements exceeds the maximum of %u bytes",
						JENTRY_OFFLENMASK)));
	if (w->depth > 0)
		child_done(w, JENTRY_ISCONTAINER | totallen);
}

void
kz_jbw_string(KzJbWriter *w, const char *s, int len)
{
	appendBinaryStringInfo(&w->buf, s, len);
	child_done(w, (JEntry) len);
}

void
kz_jbw_bool(KzJbWriter *w, bool b)
{
	child_done(w, b ? JENTRY_ISBOOL_TRUE : JENTRY_ISBOOL_FALSE);
}

void
kz_jbw_null(KzJbWriter *w)
{
	child_done(w, JENTRY_ISNULL);
}

/* Embed an existing jsonb object or array (not a scalar) as the next child. */
void
kz_jbw_jsonb(KzJbWriter *w, const Jsonb *j)
{
	int			base = w->buf.len;

	if (JB_ROOT_IS_SCALAR(j))
		elog(ERROR, "jsonb writer cannot embed a scalar document");
	pad_to_int(&w->buf);
	appendBinaryStringInfo(&w->buf, (const char *) &j->root, VARSIZE(j) - VARHDRSZ);
	child_done(w, JENTRY_ISCONTAINER | (w->buf.len - base));
}

Jsonb *
kz_jbw_finish(KzJbWriter *w)
{
	Jsonb	   *res;

	if (w->depth != 0)
		elog(ERROR, "jsonb writer finished with open containers");
	res = (Jsonb *) w->buf.data;
	SET_VARSIZE(res, w->buf.len);
	return res;
}
