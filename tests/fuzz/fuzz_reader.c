/* fuzz_reader.c - libFuzzer target: any bytes through the trace reader, the
 * model and both report writers, the function profile with its writers
 * (text, JSON, Chrome spans), and tags and phases with theirs, all without
 * symbolization.
 *
 * The same bytes are then followed as heaptrail top follows a growing
 * trace (ht_reader_follow), written in two parts with the pass advanced
 * between, when the load found the body under the cap.
 *
 * The reader must never crash, hang or leak on any input; the decompressed
 * body is capped so that a zstd bomb cannot exhaust the fuzzer's memory.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis/activity.h"
#include "analysis/functions.h"
#include "analysis/model.h"
#include "analysis/pass.h"
#include "analysis/reader.h"
#include "analysis/leaks.h"
#include "report/report.h"
#include "report/functions_section.h"
#include "analysis/marks.h"
#include "report/marks_section.h"
#include "analysis/watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* data followed as it grows: its first part, a poll and an advance held
 * at a time from the input, then the rest and everything */
static void follow(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-follow", MFD_CLOEXEC);
	if (fd < 0)
		return;
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	size_t half = size > 16 ? (size_t)data[size - 1] * size / 256 : size;
	ht_trace_t *t = NULL;
	ht_pass_t *p = NULL;
	ht_watch_t w;
	memset(&w, 0, sizeof w);
	bool grew, started = false;
	if (write(fd, data, half) == (ssize_t)half && ht_reader_follow(path, &t) == 0) {
		for (int k = 0; k < 2; k++) {
			if (k && write(fd, data + half, size - half) != (ssize_t)(size - half))
				break;
			do {
				if (ht_reader_follow_poll(t, &grew))
					goto out;
				if (!started && t->have_process) {
					if (ht_pass_new(t, &p) || ht_watch_attach(p, &w) || ht_pass_follow(p))
						goto out;
					started = true;
				}
				if (started && ht_pass_advance(p, k ? UINT64_MAX : (uint64_t)size * 1000))
					goto out;
			} while (grew);
		}
		if (started)
			ht_pass_finish(p);
	}
out:
	ht_pass_free(p);
	ht_watch_free(&w);
	ht_trace_free(t);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null_out;
	if (!null_out)
		null_out = fopen("/dev/null", "w");
	ht_reader_opts_t opts = { .max_body = 16u << 20 };
	ht_trace_t *t = NULL;
	if (ht_reader_load_mem(data, size, &opts, &t) == 0) {
		ht_model_t *m = NULL;
		if (ht_model_build(t, &m) == 0 && null_out) {
			ht_report_opts_t ro = { "fuzz", 3 };
			ht_leaks_t lk;
			if (ht_leaks_build(m, NULL, NULL, &lk) == 0) {
				ht_report_text(null_out, m, NULL, &ro, &lk);
				ht_report_json(null_out, m, NULL, NULL, &lk);
				ht_leaks_free(&lk);
			}
			/* tags and phases, with every view */
			ht_marks_t *mk = NULL;
			if (ht_marks_build(t, &mk) == 0) {
				ht_report_by_tag_text(null_out, mk, "fuzz");
				ht_emitter_t et, ej;
				ht_emit_init(&et, null_out, HT_EMIT_TEXT);
				ht_emit_init(&ej, null_out, HT_EMIT_JSON);
				ht_section_phases(&et, mk);
				ht_section_tags(&ej, mk);
				ht_section_phases(&ej, mk);
				for (size_t i = 0; i < mk->ntags && i < 3; i++) {
					ht_tag_report_opts_t to = { "fuzz", mk->tags[i].name, i, 1, 3 };
					ht_report_tag_text(null_out, m, mk, NULL, &to);
				}
			}
			ht_marks_free(mk);
		}
		ht_model_free(m);
		ht_fn_profile_t *fp = NULL;
		if (ht_fn_build(t, &fp) == 0 && null_out) {
			ht_fn_report_opts_t fo = { "fuzz", HT_TIME_AUTO, true, 3 };
			ht_emitter_t ft, fj;
			ht_emit_init(&ft, null_out, HT_EMIT_TEXT);
			ht_emit_init(&fj, null_out, HT_EMIT_JSON);
			ht_section_functions(&ft, fp, NULL, &fo);
			ht_section_functions(&fj, fp, NULL, NULL);
			/* the chrome export's spans, as its pass collects them
			 * (a small cap, so that it is reached) */
			size_t nev = 0;
			ht_pass_t *p = NULL;
			ht_fn_spans_t *spans = NULL;
			if (!ht_pass_new(t, &p) && !ht_fn_spans_attach(p, t, 50, &spans) &&
			    !ht_pass_run(p))
				for (uint32_t i = 0; i < t->nthreads && i < 4; i++)
					ht_functions_chrome_spans(null_out, t, NULL, spans, i, t->pid,
								  t->threads[i].tid, &nev);
			ht_pass_free(p);
			ht_fn_spans_free(spans);
		}
		ht_fn_free(fp);
	}
	bool small = t && t->body_len < opts.max_body;
	ht_trace_free(t);
	if (small)
		follow(data, size);
	return 0;
}
