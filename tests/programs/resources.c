/* resources.c - descriptors and handles with a known outcome.
 *
 * Every descriptor is made by one named function with one call; what is
 * left open at exit is known by construction. The program prints one line
 * per descriptor it leaks, "leak FUNCTION FD", so a test knows the numbers
 * of this run (the agent's trace file, or valgrind's, may take one).
 *
 *   leaked (function: call)           closed (function: how)
 *   leak_open: open                   closed_open: open + close
 *   leak_open64: open64               closed_openat64: openat64 + close
 *   leak_open_2: __open_2 (what open becomes under _FORTIFY_SOURCE)
 *   leak_openat: openat               closed_creat64: creat64 + close
 *   leak_creat: creat                 closed_fopen: fopen + fclose
 *   leak_socket: socket               closed_pipe2: pipe2, both closed
 *   leak_pipe: pipe (both ends)       leak_socketpair: the other end closed
 *   leak_socketpair: socketpair (1)   accept_pair: listener, client closed
 *   leak_accept: accept               closed_accept4: accept4 + close
 *   leak_dup: dup                     open_victim: open, then replaced
 *   leak_dup2: dup2 over open_victim's   by leak_dup2's dup2 (implicit close)
 *   leak_dup3: dup3 onto fd 200
 *   leak_fcntl: fcntl F_DUPFD_CLOEXEC, 100
 *   leak_fopen: fopen
 *   leak_fdopen: fdopen of a pipe2 end (make_pipe2_for_stream; the other
 *                end closed): the FILE's call is recorded (fopen)
 *   leak_freopen: fopen, then freopen of the same FILE
 *   17 descriptors leaked, from 16 functions; 32 made (an fdopen makes
 *   none), 15 closed.
 *
 * Handles (heaptrail.h):
 *   job:     start_job acquires 1..5, finish_job releases 1, 2, 3
 *            -> 2 held, both from start_job (5 acquired, 3 released)
 *   channel: open_channel acquires 10, 11, 12, open_channel_again 13,
 *            close_channel releases 11 and 99 (never acquired: nothing)
 *            -> 3 held: 2 from open_channel, 1 from open_channel_again
 *            (4 acquired, 1 released)
 *
 * Argument "fork": then forks; the child closes the leaked open64
 * descriptor, opens one of its own (child_open) and execs ARGV[2] if
 * given, else exits; the parent waits. The parent's leaks are unchanged.
 * Argument "range": then range_open duplicates base onto 300, 301, 310,
 * 400 and 401; close_range(300, 301) and closefrom(400) close four,
 * close_range(310, 310, CLOSE_RANGE_CLOEXEC) closes nothing: 310 is one
 * more leak (range_open, dup).
 * Argument "vfork": then vforks; the child closes leak_open's descriptor,
 * opens another and _exits: the parent's leaks are unchanged.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heaptrail.h"

static char dir[64];

static void say(const char *fn, int fd)
{
	char line[128];
	int n = snprintf(line, sizeof line, "leak %s %d\n", fn, fd);
	if (write(1, line, (size_t)n) != n)
		exit(3);
}

static void check(int ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(2);
	}
}

static void path(char *buf, const char *name)
{
	snprintf(buf, 128, "%s/%s", dir, name);
}

static int leak_open(void)
{
	int fd = open("/dev/null", O_RDONLY);
	check(fd >= 0, "open");
	say("leak_open", fd);
	return fd;
}

static void leak_open64(int *out)
{
	int fd = open64("/dev/null", O_RDONLY);
	check(fd >= 0, "open64");
	say("leak_open64", fd);
	*out = fd;
}

/* glibc's fortified open, declared by <fcntl.h> only with _FORTIFY_SOURCE
 * and optimization; called directly here, as such a build would. */
extern int __open_2(const char *path, int flags);

static void leak_open_2(void)
{
	int flags = O_RDONLY;
	int fd = __open_2("/dev/null", flags);
	check(fd >= 0, "__open_2");
	say("leak_open_2", fd);
}

static void leak_openat(void)
{
	int fd = openat(AT_FDCWD, "/dev/null", O_RDONLY);
	check(fd >= 0, "openat");
	say("leak_openat", fd);
}

static void leak_creat(void)
{
	char p[128];
	path(p, "created");
	int fd = creat(p, 0600);
	check(fd >= 0, "creat");
	say("leak_creat", fd);
	unlink(p);
}

static void leak_socket(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	check(fd >= 0, "socket");
	say("leak_socket", fd);
}

static void leak_pipe(void)
{
	int p[2];
	check(pipe(p) == 0, "pipe");
	say("leak_pipe", p[0]);
	say("leak_pipe", p[1]);
}

static void leak_socketpair(void)
{
	int p[2];
	check(socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0, "socketpair");
	close(p[1]);
	say("leak_socketpair", p[0]);
}

/* A listening socket in the abstract namespace and a client connected to
 * it: returns the listener (the client's fd in *client). */
static int accept_pair(int *client)
{
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "heaptrail-res-%d", (int)getpid());
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    strlen(a.sun_path + 1));
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	check(l >= 0 && bind(l, (struct sockaddr *)&a, len) == 0 && listen(l, 4) == 0, "listen");
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	check(c >= 0 && connect(c, (struct sockaddr *)&a, len) == 0, "connect");
	*client = c;
	return l;
}

static void leak_accept(int l)
{
	int fd = accept(l, NULL, NULL);
	check(fd >= 0, "accept");
	say("leak_accept", fd);
}

static void closed_accept4(int l)
{
	int fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	check(fd >= 0, "accept4");
	close(fd);
}

static void leak_dup(int from)
{
	int fd = dup(from);
	check(fd >= 0, "dup");
	say("leak_dup", fd);
}

static int open_victim(void)
{
	int fd = open("/dev/zero", O_RDONLY);
	check(fd >= 0, "open victim");
	return fd;
}

static void leak_dup2(int from, int onto)
{
	check(dup2(from, onto) == onto, "dup2");
	say("leak_dup2", onto);
}

static void leak_dup3(int from)
{
	check(dup3(from, 200, O_CLOEXEC) == 200, "dup3");
	say("leak_dup3", 200);
}

static void leak_fcntl(int from)
{
	/* the plain commands pass their argument through unchanged */
	int fl = fcntl(from, F_GETFL);
	check(fl >= 0 && fcntl(from, F_SETFL, fl | O_NONBLOCK) == 0, "fcntl F_SETFL");
	check((fcntl(from, F_GETFL) & O_NONBLOCK) != 0, "fcntl F_GETFL");
	check(fcntl(from, F_SETFL, fl) == 0, "fcntl F_SETFL back");
	int fd = fcntl(from, F_DUPFD_CLOEXEC, 100);
	check(fd >= 100 && (fcntl(fd, F_GETFD) & FD_CLOEXEC), "fcntl F_DUPFD_CLOEXEC");
	say("leak_fcntl", fd);
}

static void leak_fopen(void)
{
	FILE *f = fopen("/dev/null", "r");
	check(f != NULL, "fopen");
	say("leak_fopen", fileno(f));
}

static int make_pipe2_for_stream(void)
{
	int p[2];
	check(pipe2(p, O_CLOEXEC) == 0, "pipe2");
	close(p[1]);
	return p[0];
}

static void leak_fdopen(int fd)
{
	FILE *f = fdopen(fd, "r");
	check(f != NULL, "fdopen");
	say("leak_fdopen", fileno(f));
}

static void leak_freopen(void)
{
	FILE *f = fopen("/dev/null", "r");
	check(f != NULL, "fopen for freopen");
	f = freopen("/dev/zero", "r", f);
	check(f != NULL, "freopen");
	say("leak_freopen", fileno(f));
}

static void closed_open(void)
{
	int fd = open("/dev/null", O_RDONLY);
	check(fd >= 0 && close(fd) == 0, "closed_open");
}

static void closed_openat64(void)
{
	int fd = openat64(AT_FDCWD, "/dev/null", O_RDONLY);
	check(fd >= 0 && close(fd) == 0, "closed_openat64");
}

static void closed_creat64(void)
{
	char p[128];
	path(p, "created64");
	int fd = creat64(p, 0600);
	check(fd >= 0 && close(fd) == 0, "closed_creat64");
	unlink(p);
}

static void closed_fopen(void)
{
	FILE *f = fopen("/dev/null", "r");
	check(f != NULL && fclose(f) == 0, "closed_fopen");
}

static void closed_pipe2(void)
{
	int p[2];
	check(pipe2(p, 0) == 0, "closed_pipe2");
	close(p[0]);
	close(p[1]);
}

/* ---- handles --------------------------------------------------------------- */

static void start_job(void)
{
	for (uintptr_t j = 1; j <= 5; j++)
		heaptrail_handle_acquire("job", j);
}

static void finish_job(void)
{
	for (uintptr_t j = 1; j <= 3; j++)
		heaptrail_handle_release("job", j);
}

static void open_channel(void)
{
	for (uintptr_t c = 10; c <= 12; c++)
		heaptrail_handle_acquire("channel", c);
}

static void open_channel_again(void)
{
	heaptrail_handle_acquire("channel", 13);
}

static void close_channel(void)
{
	heaptrail_handle_release("channel", 11);
	heaptrail_handle_release("channel", 99);
}

static void range_open(int from)
{
	static const int at[] = { 300, 301, 310, 400, 401 };
	for (int i = 0; i < 5; i++)
		check(fcntl(from, F_DUPFD, at[i]) == at[i], "fcntl F_DUPFD for the range");
	say("range_open", 310);
}

static void child_open(void)
{
	int fd = open("/dev/null", O_RDONLY);
	check(fd >= 0, "child open");
	say("child_open", fd);
}

int main(int argc, char **argv)
{
	snprintf(dir, sizeof dir, "/tmp/heaptrail-res.%d", (int)getpid());
	check(mkdir(dir, 0700) == 0, "mkdir");

	int base = leak_open();
	int fd64;
	leak_open64(&fd64);
	leak_open_2();
	leak_openat();
	leak_creat();
	leak_socket();
	leak_pipe();
	leak_socketpair();
	int client;
	int l = accept_pair(&client);
	leak_accept(l);
	int client2;
	close(client);
	close(l);
	l = accept_pair(&client2);
	closed_accept4(l);
	close(client2);
	close(l);
	leak_dup(base);
	int victim = open_victim();
	leak_dup2(base, victim);
	leak_dup3(base);
	leak_fcntl(base);
	leak_fopen();
	leak_fdopen(make_pipe2_for_stream());
	leak_freopen();
	/* each reuses the number the one before closed: only the last close
	 * decides whether that number ends up leaked, so the counts in the
	 * report's headline check the others (32 opened, 15 closed) */
	closed_pipe2();
	closed_open();
	closed_openat64();
	closed_creat64();
	closed_fopen();

	start_job();
	finish_job();
	open_channel();
	open_channel_again();
	close_channel();
	rmdir(dir);

	if (argc > 1 && !strcmp(argv[1], "fork")) {
		pid_t pid = fork();
		check(pid >= 0, "fork");
		if (pid == 0) {
			close(fd64);
			child_open();
			if (argc > 2) {
				execv(argv[2], argv + 2);
				_exit(127);
			}
			exit(0);
		}
		int st;
		check(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child");
	}
	if (argc > 1 && !strcmp(argv[1], "range")) {
		range_open(base);
		check(close_range(300, 301, 0) == 0, "close_range");
		closefrom(400);
		check(fcntl(400, F_GETFD) < 0 && fcntl(401, F_GETFD) < 0, "closefrom");
		check(close_range(310, 310, CLOSE_RANGE_CLOEXEC) == 0, "close_range cloexec");
		check(fcntl(310, F_GETFD) == FD_CLOEXEC, "310 still open, close-on-exec");
	}
	if (argc > 1 && !strcmp(argv[1], "vfork")) {
		/* the child runs on our memory: its calls must not reach our
		 * trace (a close that hides leak_open's, an open never ours) */
		pid_t pid = vfork();
		if (pid == 0) {
			close(base);
			open("/dev/null", O_RDONLY);
			_exit(0);
		}
		int st;
		check(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "vfork child");
	}
	return 0;
}
