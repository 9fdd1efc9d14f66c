/*-------------------------------------------------------------------------
 *
 * verdict.h
 *	  Push verdicts and the push response envelopes (SPEC 5.10).
 *	  Implemented in src/verdict.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_VERDICT_H
#define KZ_VERDICT_H

#include "utils/jsonb.h"

/* Rejection reasons (the closed set of the protocol). */
#define KZ_R_COLUMN_DENIED	"COLUMN_DENIED"
#define KZ_R_CONSTRAINT		"CONSTRAINT"
#define KZ_R_DELETE_WINS	"DELETE_WINS"
#define KZ_R_PRECONDITION	"PRECONDITION"
#define KZ_R_RLS_DENIED		"RLS_DENIED"
#define KZ_R_SUPERSEDED		"SUPERSEDED"

typedef struct KzVerdict
{
	bool		applied;
	const char *reason;			/* rejected only */
	bool		has_server_row; /* rejected always; applied when transforms ran */
	Jsonb	   *server_row;		/* NULL: JSON null */
	char		mutation_id[37];
} KzVerdict;

/* {"mutation_id", ["reason"], ["server_row"], "verdict"} */
extern Jsonb *kz_verdict_jsonb(const KzVerdict *v);

/* A verdict whose server_row lives in cxt (to outlive a mutation's memory). */
extern void kz_verdict_copy_to(KzVerdict *v, MemoryContext cxt);

/* {"verdicts": [...]} */
extern Jsonb *kz_verdicts_response(const KzVerdict *vs, int n);

/* {"batch": {"offender_mutation_id", "outcome": "aborted", "reason", "server_row"}} */
extern Jsonb *kz_batch_abort_response(const KzVerdict *offender);

/* {"signal": {"type": "RESET_REQUIRED"}} */
extern Jsonb *kz_push_signal_response(void);

#endif							/* KZ_VERDICT_H */
