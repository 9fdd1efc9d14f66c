/*-------------------------------------------------------------------------
 *
 * kizunasync.c
 *	  Module entry point: PG_MODULE_MAGIC, _PG_init (the GUCs of push and
 *	  wake-up hints, defined in push_decide.c and wakeup.c).  The top of
 *	  src/: no file includes kizunasync.h (README, "Layout").
 *
 * jansson (used by the request parsers) allocates through palloc in the
 * current memory context, so a parse never outlives its call and an error
 * unwinds without leaks.  Allocation failures come back to jansson as NULL
 * (its documented contract) rather than as a longjmp out of its internals.
 *
 * A file that includes <jansson.h> must not include utils/builtins.h (its
 * json_object() clashes with jansson's): jansson is used here and in the
 * plain-C request parsers only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/memutils.h"

#include <jansson.h>

#include "kizunasync.h"
#include "capture_batch.h"
#include "push_decide.h"
#include "release_guard.h"
#include "wakeup.h"

PG_MODULE_MAGIC;

static void *
kz_json_malloc(size_t size)
{
	return MemoryContextAllocExtended(CurrentMemoryContext,
									  size == 0 ? 1 : size,
									  MCXT_ALLOC_NO_OOM | MCXT_ALLOC_HUGE);
}

static void
kz_json_free(void *ptr)
{
	if (ptr != NULL)
		pfree(ptr);
}

void
_PG_init(void)
{
	json_set_alloc_funcs(kz_json_malloc, kz_json_free);
	kz_push_decide_define_gucs();
	kz_wakeup_define_gucs();
	kz_capture_batch_init();
	kz_release_guard_init();
}
