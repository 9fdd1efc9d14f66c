/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  Change capture: the row trigger on synced tables and the rendering of
 *	  a row image into the changes it causes (row key, bucket value).
 *	  Implemented in src/capture.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_CAPTURE_H
#define KZ_CAPTURE_H

#include "access/htup.h"
#include "access/tupdesc.h"

#include "stamp.h"
#include "tableconf.h"

/* The rendered identity of one row image. */
typedef struct KzImage
{
	char	   *pk;
	bool		bucket_null;	/* bucketed table, NULL value */
	char	   *bucket;			/* ->> text; '' when unbucketed; NULL when null */
	char	   *bucket_json;	/* jsonb text of the value; NULL when unbucketed or null */
} KzImage;

/*
 * Render a row image's key and bucket value (as the current user, under
 * the rendering settings: see kz_render_settings_begin).  Refuses (54000)
 * a key or bucket text longer than an entry may carry.
 */
extern void kz_capture_image(const KzTableConf *conf, HeapTuple tuple, TupleDesc desc,
							 KzImage *img);

/* The change recording img's current state (an entry). */
extern void kz_capture_entry_change(KzChange *ch, const KzTableConf *conf,
									const KzImage *img, TransactionId row_xmin);

/* The change recording that img left (a tombstone). */
extern void kz_capture_tombstone_change(KzChange *ch, const KzTableConf *conf,
										const KzImage *img);

/* Forget the per-column HLCs of a row that is gone (hlc conflict mode). */
extern void kz_capture_forget_row_hlc(const KzTableConf *conf, const char *pk);

/*
 * Pin the settings values render under (TimeZone UTC, DateStyle ISO,
 * IntervalStyle postgres, extra_float_digits 1, bytea_output hex): those
 * that differ are set in a new GUC nest level; returns the level for
 * kz_render_settings_end (-1 when nothing had to be set).
 */
extern int	kz_render_settings_begin(void);
extern void kz_render_settings_end(int level);

#endif							/* KZ_CAPTURE_H */
