/*-------------------------------------------------------------------------
 *
 * capture_spill.h
 *	  Captured changes a transaction numbers at commit, kept out of memory
 *	  (decisions/0010, "Numbering at commit"; capture_batch.h).
 *
 *	  A tuplestore of the transaction (work_mem in memory, then temporary
 *	  files) holds changes in capture order with the subtransaction that
 *	  captured each.  Nothing can be removed from it, so a subtransaction's
 *	  abort is remembered as a mark instead: the changes stored before the
 *	  mark that its subtransaction (or one nested in it) captured are dead,
 *	  and reading skips them.  Changes recorded inside a subtransaction stay
 *	  stored (marked recorded) until it commits into the top level, so that
 *	  its abort can make them unrecorded again without holding them in
 *	  memory.  Implemented in src/capture_spill.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_CAPTURE_SPILL_H
#define KZ_CAPTURE_SPILL_H

#include "stamp.h"

/* Store a copy of *change, captured in subtransaction subid. */
extern void kz_spill_append(const KzChange *change, SubTransactionId subid);

/* Changes stored (dead ones included) and not recorded. */
extern int64 kz_spill_unrecorded(void);

/*
 * Subtransaction subid aborted: what it and its children stored is dead,
 * and what they recorded of the store is unrecorded again.
 */
extern void kz_spill_abort_sub(SubTransactionId subid);

/* Subtransaction subid committed into parent: its recordings are parent's. */
extern void kz_spill_commit_sub(SubTransactionId subid, SubTransactionId parent);

/*
 * Reading, from the first change not recorded: kz_spill_rewind, then
 * kz_spill_next until it returns false; each live change's strings are
 * allocated in cxt.  A read that an error interrupts can start again.
 */
extern void kz_spill_rewind(void);
extern bool kz_spill_next(KzChange *change, SubTransactionId *subid, MemoryContext cxt);

/*
 * Every change stored is now recorded, in subtransaction subid: at the top
 * level the store is emptied (its files closed); inside a subtransaction it
 * is kept, and read again if subid aborts.
 */
extern void kz_spill_recorded(SubTransactionId subid);

/* Empty the store; closes its files. */
extern void kz_spill_clear(void);

/* The transaction ended: forget the store (its memory and files went with it). */
extern void kz_spill_forget(void);

#endif							/* KZ_CAPTURE_SPILL_H */
