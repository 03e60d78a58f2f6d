/* run_tree.c - a process tree known by construction, for the run's list of
 * processes (tests/e2e/test_runs.py).
 *
 * run_tree             the root: allocates 1000 bytes, then
 *   child "worker"     a fork child: allocates 3 x 5000 bytes, exits 3
 *   child "leaf"       a fork child that execs `run_tree leaf` at once
 *                      (its pre-exec image allocates nothing: no trace);
 *                      the leaf allocates 20000 bytes and leaks 700, exits 0
 *   child "killed"     a fork child: allocates 64 bytes, kills itself with
 *                      SIGTERM
 * and waits for them, then exits 0. Every process prints
 * "role ROLE pid PID parent PPID" on stdout before it allocates.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile sink;

static void say(const char *role)
{
	printf("role %s pid %ld parent %ld\n", role, (long)getpid(), (long)getppid());
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc > 1) { /* the exec'd leaf */
		say("leaf");
		void *p = malloc(20000); /* RUN_TREE_LEAF */
		free(p);
		sink = malloc(700); /* leaked */
		sink = NULL;
		return 0;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	say("root");
	void *r = malloc(1000); /* RUN_TREE_ROOT */
	pid_t w = fork();
	if (w == 0) {
		say("worker");
		for (int i = 0; i < 3; i++)
			free(malloc(5000));
		_exit(3);
	}
	pid_t l = fork();
	if (l == 0) {
		execl("/proc/self/exe", argv[0], "leaf", (char *)NULL);
		_exit(127);
	}
	pid_t k = fork();
	if (k == 0) {
		say("killed");
		sink = malloc(64);
		kill(getpid(), SIGTERM);
		_exit(1);
	}
	int st;
	waitpid(w, &st, 0);
	waitpid(l, &st, 0);
	waitpid(k, &st, 0);
	free(r);
	return 0;
}
