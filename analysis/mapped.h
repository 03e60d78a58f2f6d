/* mapped.h - the program's own memory maps (EXT MMAP, MUNMAP, MREMAP,
 * MADVISE_FREE; agent/maps.c): bytes mapped by call site, live at the end
 * and at the peak of mapped memory. */
#ifndef HEAPTRAIL_MAPPED_H
#define HEAPTRAIL_MAPPED_H

#include <stdint.h>

#include "analysis/pass.h"

typedef struct ht_map_site {
	uint64_t stack_id;
	unsigned kind;	    /* HT_MAP_* of its first map */
	uint64_t maps;	    /* mmap and mremap calls */
	uint64_t bytes_mapped; /* their lengths (an mremap: its new length) */
	uint64_t live;	    /* mapped at the end of the trace */
	uint64_t at_peak;   /* mapped when all the maps together peaked */
	uint64_t max_live;  /* its own peak */
	uint64_t first_time;
} ht_map_site_t;

typedef struct ht_mapped {
	ht_map_site_t *sites; /* in order of first map */
	size_t nsites;
	uint64_t live, peak, peak_time; /* bytes mapped: at the end, at the peak */
	uint64_t maps, unmaps, remaps;
	uint64_t advised_free;	/* bytes given back by madvise DONTNEED/FREE */
	uint64_t unknown_unmapped; /* bytes unmapped that no recorded map held */
	/* live after each map event that changed it, in time order (the
	 * timeline's mapped series); at most HT_MAPPED_STEPS, then every
	 * other one is dropped (steps_every doubles) */
	uint64_t *step_time, *step_live;
	size_t nsteps, steps_cap;
	unsigned steps_every, steps_skip;
} ht_mapped_t;

#define HT_MAPPED_STEPS (1u << 20)

/* Bytes mapped at time t, from m's steps (0 before the first). */
uint64_t ht_mapped_at(const ht_mapped_t *m, uint64_t t);

/* Registers the consumer; *out is filled when the pass ends, and stays
 * NULL when the trace has no map events. */
int ht_mapped_attach(ht_pass_t *p, const ht_trace_t *t, ht_mapped_t **out);
void ht_mapped_free(ht_mapped_t *m);

#endif /* HEAPTRAIL_MAPPED_H */
