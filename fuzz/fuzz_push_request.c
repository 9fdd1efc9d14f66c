/*
 * fuzz_push_request.c
 *	  libFuzzer target for the push batch parser (src/request_push.c) and
 *	  the HLC helpers (src/hlc.c).  Build and run: fuzz/run.sh 60 push_request
 *	  (fuzz/push_request.conf names the sources).
 *
 *	  Invariants checked on every input: the parser never crashes, every
 *	  failure carries a 5-character SQLSTATE and a message, its message and
 *	  detail are printable ASCII (client text reaches them only quoted by
 *	  kz_quote), and every success yields structs within the documented
 *	  limits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request_push.h"
#include "hlc.h"

typedef struct Arena
{
	void	  **ptrs;
	size_t		n;
	size_t		cap;
} Arena;

static void *
arena_alloc(void *arg, size_t size)
{
	Arena	   *a = arg;
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
		abort();
	if (a->n == a->cap)
	{
		a->cap = a->cap ? a->cap * 2 : 64;
		a->ptrs = realloc(a->ptrs, a->cap * sizeof(void *));
		if (a->ptrs == NULL)
			abort();
	}
	a->ptrs[a->n++] = p;
	return p;
}

static void
arena_free(Arena *a)
{
	size_t		i;

	for (i = 0; i < a->n; i++)
		free(a->ptrs[i]);
	free(a->ptrs);
	memset(a, 0, sizeof(*a));
}

/* Client text reaches a message only quoted (quote.h): printable ASCII. */
static void
check_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char) *s < 0x20 || (unsigned char) *s >= 0x7f)
			abort();
}

static void
check_error(const KzReqError *err)
{
	if (strlen(err->sqlstate) != 5 || err->message[0] == '\0')
		abort();
	check_printable(err->message);
	check_printable(err->detail);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Arena		arena = {0};
	KzPushReq	req;
	KzReqError	err;
	int			i;

	if (kz_push_parse((const char *) data, size, arena_alloc, &arena, &req, &err))
	{
		if (req.nmutations > KZ_PUSH_HARD_MAX_MUTATIONS)
			;					/* refused by count in the backend */
		else if (kz_push_validate(&req, arena_alloc, &arena, &err))
		{
			for (i = 0; i < req.nmutations; i++)
			{
				KzMutationReq *m = &req.mutations[i];
				KzHlc		h,
							h2;

				if (strlen(m->mutation_id) != 36 || m->table == NULL || m->pk == NULL)
					abort();
				if (m->ncolumns > KZ_PUSH_MAX_COLUMNS || m->ntransforms > KZ_PUSH_MAX_TRANSFORMS)
					abort();
				if (m->hlc)
				{
					char		ceil[25];
					char		out[200];

					if (!kz_hlc_split(m->hlc, &h))
						abort();	/* the wire grammar guarantees a counter */
					if (kz_hlc_compare(&h, &h) != 0)
						abort();
					kz_hlc_format_iso(0, ceil);
					if (kz_hlc_clamp(&h, ceil, out, sizeof(out)))
					{
						if (!kz_hlc_split(out, &h2) || kz_hlc_compare(&h2, &h) >= 0)
							abort();
					}
				}
			}
		}
		else
			check_error(&err);
	}
	else
		check_error(&err);
	kz_push_release(&req);
	arena_free(&arena);
	return 0;
}

#ifdef KZ_FUZZ_MAIN
/* Replay files given on the command line (no libFuzzer needed). */
int
main(int argc, char **argv)
{
	int			i;

	for (i = 1; i < argc; i++)
	{
		FILE	   *f = fopen(argv[i], "rb");
		char	   *buf;
		long		len;

		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		fseek(f, 0, SEEK_SET);
		buf = malloc(len + 1);
		if (fread(buf, 1, len, f) != (size_t) len)
			len = 0;
		fclose(f);
		LLVMFuzzerTestOneInput((const uint8_t *) buf, (size_t) len);
		free(buf);
	}
	printf("replayed %d inputs\n", argc - 1);
	return 0;
}
#endif
