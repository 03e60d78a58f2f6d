/* resources.h - descriptors and handles still open at the end of a trace
 *, from its EXT events.
 *
 * A descriptor is leaked when the trace saw it opened (FD_OPEN) and not
 * closed by the end; 0, 1 and 2, and descriptors never seen opened (those
 * the process inherited), never are, as with valgrind --track-fds. A later
 * FD_OPEN of a descriptor still open (fdopen) replaces its open stack.
 * A handle (heaptrail_handle_acquire) is held when acquired and not
 * released by the end; acquiring a held handle again moves it to the new
 * stack. Leaks are grouped by the stack that opened or acquired them.
 */
#ifndef HEAPTRAIL_RESOURCES_H
#define HEAPTRAIL_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/reader.h"

/* Descriptors still open, opened by one stack with one call. */
typedef struct ht_fd_leak {
	unsigned call;		 /* HT_FDCALL_* */
	uint64_t stack_id;
	const ht_stack_t *stack; /* NULL: unknown */
	uint64_t first_time;	 /* earliest open of the group */
	uint64_t *fds;		 /* ascending */
	size_t count;
} ht_fd_leak_t;

/* Handles of one kind still held, acquired by one stack. */
typedef struct ht_handle_site {
	uint64_t stack_id;
	const ht_stack_t *stack;
	uint64_t first_time;
	uint64_t count;
} ht_handle_site_t;

typedef struct ht_handle_kind {
	uint64_t name_id;
	const char *name;   /* NULL when the trace lost its NAME */
	uint64_t acquired;  /* ACQUIRE events */
	uint64_t released;  /* RELEASE events of held handles */
	uint64_t held;	    /* at the end */
	ht_handle_site_t *sites; /* most handles first */
	size_t nsites;
} ht_handle_kind_t;

typedef struct ht_resources {
	uint64_t fds_opened; /* FD_OPENs of descriptors not open at the time */
	uint64_t fds_closed; /* FD_CLOSEs of descriptors seen opened */
	uint64_t fds_leaked; /* sum of the groups' counts */
	ht_fd_leak_t *fd_leaks; /* most descriptors first, then earliest */
	size_t nfd_leaks;
	ht_handle_kind_t *kinds; /* those with handles held, by name */
	size_t nkinds;
	uint64_t handles_held;
} ht_resources_t;

/* Replays t's EXT events. Returns 0 or -ENOMEM. */
int ht_resources_build(const ht_trace_t *t, ht_resources_t **out);
/* The same replay as one consumer of pass p (analysis/pass.h): *out is filled
 * once ht_pass_run(p) has returned 0; the caller frees it in any case. */
struct ht_pass;
int ht_resources_attach(struct ht_pass *p, const ht_trace_t *t, ht_resources_t **out);
void ht_resources_free(ht_resources_t *r);
/* "open", "socket", "accept", "pipe", "dup", "fopen", "other" */
const char *ht_fdcall_name(unsigned call);

#endif /* HEAPTRAIL_RESOURCES_H */
