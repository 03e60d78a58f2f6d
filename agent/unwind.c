/* unwind.c - capture the return addresses of the current call stack.
 *
 * Two backends:
 * - libunwind's unw_backtrace (default): DWARF CFI, right on code built
 *   without frame pointers (most distribution binaries). With the per-thread
 *   cache policy it replays cached frame descriptions, without locks.
 * - a frame-pointer walker (unwind=fp): a few loads per frame, for programs
 *   built with -fno-omit-frame-pointer. Every frame pointer is checked against
 *   the thread's stack bounds, so garbage ends the walk instead of a crash.
 *
 * Frames are raw return addresses; symbolization happens later, in the CLI.
 * The capture itself is inline (agent/unwind.h), so that the walk starts in
 * the hook's own frame: every agent frame costs a lookup per event.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "agent.h"
#include "unwind.h"

void ht_unwind_init(void)
{
	/* Cache unwind info per thread, so that unwinding takes no lock, and
	 * warm the cache up before the hooks are armed. */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	void *warm[8];
	unw_backtrace(warm, 8);
}
