/* handles_released.c - handle kinds with nothing held at exit
 * (tests/e2e/test_resources.py, resources.handles_released).
 *
 *   "job"    acquired once, released: nothing held
 *   "conn"   released only (a handle the agent never saw acquired)
 *   "lease"  acquired twice, released once: 1 held (not with "none")
 * handle_leaks lists "lease" alone: held 1, acquired 2, released 1.
 */
#include <string.h>

#include "heaptrail.h"

int main(int argc, char **argv)
{
	heaptrail_handle_acquire("job", 1);
	heaptrail_handle_release("job", 1);
	heaptrail_handle_release("conn", 7);
	if (argc > 1 && !strcmp(argv[1], "none"))
		return 0;
	heaptrail_handle_acquire("lease", 1);
	heaptrail_handle_acquire("lease", 2);
	heaptrail_handle_release("lease", 1);
	return 0;
}
