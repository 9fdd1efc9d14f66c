/*-------------------------------------------------------------------------
 *
 * push_write.h
 *	  The statements a push mutation runs against its application row, as
 *	  the caller (RLS and column privileges apply; ONLY the synced table):
 *	  the column-privilege gate, preconditions, insert key authority,
 *	  upsert, masked update and delete.  Must be called inside SPI.
 *	  Implemented in src/push_write.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_PUSH_WRITE_H
#define KZ_PUSH_WRITE_H

#include "utils/jsonb.h"

#include "request_push.h"
#include "tabledesc.h"

/* SPEC 5.5: would the caller's column privileges refuse the mutation? */
extern bool kz_push_column_denied(KzTableDesc *t, const KzMutationReq *m);

/* Does every precondition hold against the caller-visible row? */
extern bool kz_push_precondition_holds(KzTableDesc *t, const KzMutationReq *m, Jsonb *row,
									   Jsonb *precondition);

/* Insert key authority: key columns named in columns equal the pk's. */
extern bool kz_push_insert_keys_agree(KzTableDesc *t, const KzMutationReq *m, Datum *keyvals,
									  Jsonb *columns);

/* INSERT ... ON CONFLICT (key) DO UPDATE of names[0 .. n-1]. */
extern void kz_push_upsert(KzTableDesc *t, Datum *keyvals, Jsonb *columns,
						   const char **names, int n);

/* UPDATE of names[0 .. n-1]; returns the rows updated (0 or 1). */
extern uint64 kz_push_update(KzTableDesc *t, Datum *keyvals, Jsonb *columns,
							 const char **names, int n);

/* DELETE under the preconditions; returns the rows deleted (0 or 1). */
extern uint64 kz_push_delete(KzTableDesc *t, const KzMutationReq *m, Datum *keyvals,
							 Jsonb *precondition);

/* Key values as statement parameters after nextra leading ones. */
extern void kz_push_key_params(KzTableDesc *t, Datum *keyvals, int nextra, Oid *types,
							   Datum *values);

#endif							/* KZ_PUSH_WRITE_H */
