/* attach.h - `heaptrail attach` and `heaptrail detach`: the agent loaded
 * into a running process with ptrace, and stopped again. */
#ifndef HEAPTRAIL_ATTACH_H
#define HEAPTRAIL_ATTACH_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct ht_attach_opts {
	pid_t pid;
	const char *output;	   /* trace path (%p, %n), or NULL: heaptrail.%n.%p.ht here */
	double for_seconds;	   /* detach after this long; 0: at Ctrl-C or the process's end */
	unsigned depth;		   /* 0: the agent's default */
	const char *unwind;	   /* "fp", "libunwind" or NULL */
	bool no_leak_check;
	bool free_stacks;
	unsigned long long sample_rate;
} ht_attach_opts_t;

/* Attaches, records until --for, Ctrl-C, SIGTERM, heaptrail detach or the
 * process's end, detaches. 0 on success; 1 when heaptrail could not attach
 * (said why, the process untouched) or lost the process. */
int ht_attach(const ht_attach_opts_t *o);

/* Asks the agent in pid to stop recording and waits until the trace is
 * complete. 0 on success, 1 when there is nothing to detach. */
int ht_detach(pid_t pid, bool quiet);

/* A duration: "10" or "10s", "500ms", "2m", "1h"; false if malformed. */
bool ht_parse_duration(const char *s, double *seconds);

#endif /* HEAPTRAIL_ATTACH_H */
