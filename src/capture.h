/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  Internals shared by capture.c (triggers, seed, push queue) and
 *	  sequencing.c (the fence, recording an entry, the horizon).  Not part
 *	  of the API other parts use: that is sequencing.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_CAPTURE_H
#define KZ_CAPTURE_H

#include "postgres.h"

/* One captured change, ready to be numbered and recorded. */
typedef struct KzChange
{
	char		op;				/* 'u': changelog entry, 'd': tombstone */
	char	   *table_name;
	char	   *pk;
	char	   *bucket_value;	/* 'u': NULL for a NULL value; 'd': never NULL */
	char	   *snapshot;		/* 'd': bucket snapshot as jsonb text */
} KzChange;

/* sequencing.c */
extern int	kz_debug_wait_after_draw;
extern void kz_sequencing_define_gucs(void);

/*
 * Record changes[0 .. n-1] in order: for each, delete the entry it
 * supersedes (outside the fence), then draw its seq and insert its entry
 * inside the fence.  Returns the last seq drawn.
 */
extern int64 kz_record_changes(const KzChange *changes, int n);

/* capture.c */
extern void kz_capture_xact_init(void);

#endif							/* KZ_CAPTURE_H */
