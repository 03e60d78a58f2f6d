/* progress.h - a progress line on stderr for long reads of a trace.
 *
 * The commands that read a whole trace (report, leaks, convert, diff) turn
 * it on; the reader and the pass then say where they are. Nothing is
 * printed unless stderr is a terminal and the command has run for a second
 * (HEAPTRAIL_PROGRESS_AFTER_MS changes that delay, for the tests), and the
 * line is erased before anything else is written.
 */
#ifndef HEAPTRAIL_PROGRESS_H
#define HEAPTRAIL_PROGRESS_H

#include <stdint.h>

/* Turn the line on for this process (when stderr is a terminal). */
void ht_progress_enable(void);
/* phase: what is being done; done of total: bytes when `bytes`, else a
 * fraction of the trace's time span. Cheap when nothing is to be printed:
 * callable per record. Main thread only. */
void ht_progress(const char *phase, uint64_t done, uint64_t total, int bytes);
/* Erase the line if one was printed (before output to the terminal). */
void ht_progress_clear(void);

#endif
