/* attach_tracer.c - traces process argv[1] (PTRACE_SEIZE: it runs on) until
 * stdin ends, for heaptrail attach's "already traced" refusal. Prints
 * "tracing" once it is the tracer. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	pid_t pid = (pid_t)atoi(argv[1]);
	if (ptrace(PTRACE_SEIZE, pid, 0, 0)) {
		perror("ptrace");
		return 1;
	}
	printf("tracing\n");
	fflush(stdout);
	char buf[64];
	while (read(0, buf, sizeof buf) > 0)
		;
	ptrace(PTRACE_DETACH, pid, 0, 0);
	return 0;
}
