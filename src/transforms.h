/*-------------------------------------------------------------------------
 *
 * transforms.h
 *	  Field transforms of a push update (increment, arrayUnion,
 *	  arrayRemove), applied at the arbiter on the current server value, as
 *	  the caller; never compared by HLC and never journaled.  Must be called
 *	  inside SPI.  Implemented in src/transforms.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_TRANSFORMS_H
#define KZ_TRANSFORMS_H

#include "utils/jsonb.h"

#include "request_push.h"
#include "tabledesc.h"

/*
 * Apply the mutation's transforms to its row.  Returns NULL when applied
 * (*nrows: rows updated, 0 when the caller may not update the row), else
 * a rejection reason.
 */
extern const char *kz_transforms_apply(KzTableDesc *t, const KzMutationReq *m, Jsonb *mutation,
									   Datum *keyvals, uint64 *nrows);

#endif							/* KZ_TRANSFORMS_H */
