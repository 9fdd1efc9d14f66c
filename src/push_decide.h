/*-------------------------------------------------------------------------
 *
 * push_decide.h
 *	  The per-mutation decision of kizunasync.push, in SPEC 5.4 order:
 *	  column gate, row lock, removed-row check, preconditions, writes (as
 *	  the caller), HLC mode, transforms, the conflict journal.  A rejection
 *	  rolls back everything the mutation wrote (its own subtransaction).
 *	  The deviations from the SPEC are in decisions/0030.  Must be called
 *	  inside SPI.  Implemented in src/push_decide.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_PUSH_DECIDE_H
#define KZ_PUSH_DECIDE_H

#include "utils/jsonb.h"

#include "request_push.h"
#include "tabledesc.h"
#include "verdict.h"

/* What the decision of one mutation needs. */
typedef struct KzMutationCtx
{
	KzMutationReq *req;
	Jsonb	   *mutation;		/* the mutation's jsonb object */
	KzTableDesc *tab;
	Datum	   *keyvals;		/* parsed pk, key order */
	int			hlc_skew_ms;
	const char *sub;			/* the pusher's JWT sub, or NULL */
	bool		journaled;		/* out: a journal row awaits its winner seq */
} KzMutationCtx;

/* Decide (and apply) one mutation; fills v. */
extern void kz_push_decide(KzMutationCtx *ctx, KzVerdict *v);

/* Forget the rows deleted earlier in the call (at the start of a push). */
extern void kz_push_decide_reset(void);

/* Registers kizunasync.log_rejections (called from _PG_init). */
extern void kz_push_decide_define_gucs(void);

#endif							/* KZ_PUSH_DECIDE_H */
