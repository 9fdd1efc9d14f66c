/*-------------------------------------------------------------------------
 *
 * push_hlc.h
 *	  HLC conflict mode of push (SPEC 5.7, decisions/0032): per-column
 *	  hybrid logical clocks in kizunasync.row_hlc decide which columns of a
 *	  mutation win.  Must be called inside SPI.  Implemented in
 *	  src/push_hlc.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_PUSH_HLC_H
#define KZ_PUSH_HLC_H

#include "utils/jsonb.h"

#include "request_push.h"
#include "tabledesc.h"

/*
 * Resolve and write the mutation's columns by HLC: the columns whose stored
 * clock is older than the mutation's (clamped to now + skew_ms) are written
 * (as the caller) and journaled.  Returns NULL when some column won, else
 * the rejection reason; *row is then the caller-visible row.
 * *journaled tells that a journal row awaits its winner seq.
 */
extern const char *kz_push_hlc_apply(KzTableDesc *t, const KzMutationReq *m, Datum *keyvals,
									 Jsonb *columns, int skew_ms, Jsonb **row,
									 bool *journaled);

/* Lock the row's clock map (creating an empty one): serializes inserters of a key. */
extern void kz_push_hlc_lock(KzTableDesc *t, const char *pk);

#endif							/* KZ_PUSH_HLC_H */
