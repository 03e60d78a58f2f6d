/* top_phases.c - a heap that changes in phases the test drives, for
 * heaptrail top (tests/e2e/test_top.py). argv[1] is a directory: the
 * program writes "phase N" to DIR/phase when it has entered phase N, and
 * moves on when the test creates DIR/goN (DIR/stop ends it).
 *
 *   throughout  churn      malloc(100) then free, every 10 ms (~100/s)
 *   phase 1     phase_one  64 blocks of 64 KiB held: 4 MiB
 *   phase 2     phase_two  16 blocks of 64 KiB held: 1 MiB (heap 5 MiB:
 *                          the peak), then phase_one frees 16 of its
 *                          blocks: 3 MiB left there, heap 4 MiB
 *   stop                   exits with everything held: 4 MiB in use
 *
 * Exit status 0; 1 when the directory cannot be used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (64 * 1024)

static void *one[64], *two[16];
static const char *dir;

void churn(void);
void phase_one(void);
void phase_two(void);

void churn(void)
{
	char *volatile p = malloc(100);
	if (p)
		p[0] = 1;
	free(p);
}

void phase_one(void)
{
	for (int i = 0; i < 64; i++)
		memset(one[i] = malloc(BLOCK), 1, BLOCK);
}

void phase_two(void)
{
	for (int i = 0; i < 16; i++)
		memset(two[i] = malloc(BLOCK), 2, BLOCK);
	for (int i = 0; i < 16; i++) {
		free(one[i]);
		one[i] = NULL;
	}
}

static void say(int n)
{
	char path[4096], tmp[4096];
	snprintf(path, sizeof path, "%s/phase", dir);
	snprintf(tmp, sizeof tmp, "%s/phase.tmp", dir);
	FILE *f = fopen(tmp, "w");
	if (!f)
		exit(1);
	fprintf(f, "phase %d\n", n);
	fclose(f);
	rename(tmp, path);
}

static int exists(const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* churns until DIR/name exists */
static void wait_for(const char *name)
{
	while (!exists(name)) {
		churn();
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 1;
	dir = argv[1];
	phase_one();
	say(1);
	wait_for("go2");
	phase_two();
	say(2);
	wait_for("stop");
	printf("top_phases: done\n");
	return 0;
}
