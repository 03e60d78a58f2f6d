/* fuzz_reader.c - libFuzzer target: any bytes through the trace reader, the
 * model and both report writers (without symbolization).
 *
 * The reader must never crash, hang or leak on any input; the decompressed
 * body is capped so that a zstd bomb cannot exhaust the fuzzer's memory.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "reader.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
			ht_report_text(null_out, m, NULL, &ro);
			ht_report_json(null_out, m, NULL, NULL);
		}
		ht_model_free(m);
	}
	ht_trace_free(t);
	return 0;
}
