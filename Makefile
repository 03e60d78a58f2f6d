# heaptrail - one non-recursive GNU Makefile.
#   make            agent (build/libheaptrail.so) and CLI (build/heaptrail)
#   make check      unit tests, fuzz corpus replay, end-to-end tests
#   make install    PREFIX=/usr/local DESTDIR=
#   make fuzz       libFuzzer binaries (clang)
# Knobs: CC, CFLAGS, LDFLAGS, DEBUG=1.

PREFIX ?= /usr/local
prefix ?= $(PREFIX)
bindir ?= $(prefix)/bin
libdir ?= $(prefix)/lib
includedir ?= $(prefix)/include
mandir ?= $(prefix)/share/man
docdir ?= $(prefix)/share/doc/heaptrail
bashcompdir ?= $(prefix)/share/bash-completion/completions
zshcompdir ?= $(prefix)/share/zsh/site-functions
DESTDIR ?=

CC ?= cc
CXX ?= c++
B := build
PKG_CONFIG ?= pkg-config
VERSION := 0.1.0

WARN := -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes -Wshadow -Werror
OPT := $(if $(DEBUG),-O0 -g3,-O2 -g)
BASE_CFLAGS := -std=gnu11 $(OPT) $(WARN) -D_GNU_SOURCE -DHT_VERSION='"$(VERSION)"' -Icommon -Iinclude
CFLAGS ?=

# The agent runs inside the target: position independent, hidden symbols but the
# hooks, initial-exec TLS (no allocation on first touch), no malloc builtins (the
# compiler must not turn our code into malloc calls), frame pointers kept, and
# unwind tables so C++ exceptions thrown by operator new cross our frames.
AGENT_CFLAGS := -fPIC -fvisibility=hidden -ftls-model=initial-exec -fno-builtin-malloc -fno-omit-frame-pointer -fexceptions
AGENT_LIBS := $(shell $(PKG_CONFIG) --libs libunwind libzstd) -ldl -lpthread -lm

CLI_LIBS := $(shell $(PKG_CONFIG) --libs libdw libzstd libprotobuf-c zlib) -lstdc++ -lm

AGENT_SRC := $(wildcard agent/*.c)
CLI_SRC := $(wildcard cli/*.c) $(wildcard analysis/*.c) $(wildcard report/*.c)
AGENT_OBJ := $(AGENT_SRC:%.c=$(B)/%.o)
# pprof's schema, compiled by protoc-c at build time (generated code is not
# committed): third_party/pprof/profile.proto -> build/gen/profile.pb-c.{c,h}.
PB_PROTO := third_party/pprof/profile.proto
PB_GEN := $(B)/gen/profile.pb-c.c
HOST_HDR := $(wildcard cli/*.h) $(wildcard analysis/*.h) $(wildcard report/*.h) $(wildcard common/*.h)
# The HTML report's template (report/html/: page, style, script), embedded
# as C arrays at build time: build/gen/html_assets.c.
HTML_ASSETS := report/html/report.html report/html/report.css report/html/report.js
HTML_GEN := $(B)/gen/html_assets.c
CLI_OBJ := $(CLI_SRC:%.c=$(B)/%.o) $(B)/gen/profile.pb-c.o $(B)/gen/html_assets.o
CLI_LIB_OBJ := $(filter-out $(B)/cli/main.o,$(CLI_OBJ))
ASAN_CLI_OBJ := $(CLI_SRC:%.c=$(B)/asan/%.o) $(B)/asan/gen/profile.pb-c.o $(B)/asan/gen/html_assets.o

PROG_C := $(wildcard tests/programs/*.c)
PROG_CXX := $(wildcard tests/programs/*.cc)
PROGS := $(PROG_C:tests/programs/%.c=$(B)/tests/%) $(PROG_CXX:tests/programs/%.cc=$(B)/tests/%)
UNIT_SRC := $(wildcard tests/unit/*.c)
UNITS := $(UNIT_SRC:tests/unit/%.c=$(B)/unit/%)
BENCH_C := $(wildcard bench/workloads/*.c)
BENCH_CXX := $(wildcard bench/workloads/*.cc)
BENCHES := $(BENCH_C:bench/workloads/%.c=$(B)/bench/%) $(BENCH_CXX:bench/workloads/%.cc=$(B)/bench/%)

all: $(B)/libheaptrail.so $(B)/heaptrail

$(B)/agent/%.o: agent/%.c $(wildcard agent/*.h) $(wildcard common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(AGENT_CFLAGS) $(CFLAGS) -c $< -o $@

# Linked beside and renamed into place: a program started while the agent is
# rebuilt loads the old file or the new one, never a half-written one (ld.so
# then ignores the preload and the run leaves no trace).
$(B)/libheaptrail.so: $(AGENT_OBJ)
	$(CC) -shared -o $@.tmp $^ $(LDFLAGS) -Wl,-z,now -Wl,--no-undefined $(AGENT_LIBS)
	mv -f $@.tmp $@

$(B)/%.o: %.c $(HOST_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -I. $(CFLAGS) -c $< -o $@

$(B)/gen/profile.pb-c.c $(B)/gen/profile.pb-c.h &: $(PB_PROTO)
	@mkdir -p $(B)/gen
	protoc-c --proto_path=$(dir $(PB_PROTO)) --c_out=$(B)/gen $(notdir $(PB_PROTO))

$(B)/gen/profile.pb-c.o: $(PB_GEN) $(B)/gen/profile.pb-c.h
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -c $< -o $@

# Each file as a NUL-terminated char array (od and sed: no tool beyond
# POSIX's), written beside and renamed into place.
$(HTML_GEN): $(HTML_ASSETS)
	@mkdir -p $(B)/gen
	{ echo '/* generated from report/html/ by the Makefile: do not edit */'; \
	  for f in page:report.html css:report.css js:report.js; do \
		echo "const char ht_html_$${f%%:*}[] = {"; \
		od -An -v -tx1 report/html/$${f#*:} | sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
		echo '0};'; \
	  done; } > $@.tmp
	mv -f $@.tmp $@

$(B)/gen/html_assets.o: $(HTML_GEN)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -c $< -o $@

$(B)/asan/gen/html_assets.o: $(HTML_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O1 -g $(SAN) -c $< -o $@

# report/pprof.c includes the generated header.
$(B)/report/pprof.o $(B)/asan/report/pprof.o: $(B)/gen/profile.pb-c.h
$(B)/report/pprof.o $(B)/asan/report/pprof.o $(B)/fuzz/fuzz_reader: BASE_CFLAGS += -I$(B)/gen

$(B)/heaptrail: $(CLI_OBJ)
	$(CC) -o $@ $^ $(LDFLAGS) $(CLI_LIBS)

# The CLI again with AddressSanitizer and UBSan: the test suite reports with it.
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
$(B)/asan/%.o: %.c $(HOST_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -I. -O1 -g $(SAN) -c $< -o $@

$(B)/asan/gen/profile.pb-c.o: $(PB_GEN) $(B)/gen/profile.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O1 -g $(SAN) -c $< -o $@

$(B)/asan/heaptrail: $(ASAN_CLI_OBJ)
	$(CC) $(SAN) -o $@ $^ $(CLI_LIBS)

# Test programs: counts known by construction. -O0 and frame pointers so that
# call sites stay where the source says.
$(B)/tests/%: tests/programs/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -fno-omit-frame-pointer -fno-builtin -D_GNU_SOURCE -Iinclude -o $@ $< -ldl -lpthread -rdynamic

# The programs that print their figures with put_u.h.
$(B)/tests/sigalloc $(B)/tests/siglongjmp $(B)/tests/sigqueue_order $(B)/tests/rlimit_as: \
	tests/programs/put_u.h

# Without PIE: its PLT entry is malloc's canonical address.
$(B)/tests/malloc_pointer: tests/programs/malloc_pointer.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -fno-omit-frame-pointer -fno-builtin -no-pie -fno-pie -o $@ $<

# A program that walks its own stack with libunwind in a signal handler.
$(B)/tests/sigprof_unwind: tests/programs/sigprof_unwind.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -fno-omit-frame-pointer -fno-builtin -D_GNU_SOURCE -Iinclude -o $@ $< -lunwind -ldl -lpthread -rdynamic

# Programs of the function profiler's tests (fn_*.c): built with
# -finstrument-functions, so the agent sees every function's entry and exit.
$(B)/tests/fn_%: tests/programs/fn_%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -fno-omit-frame-pointer -fno-builtin -finstrument-functions -D_GNU_SOURCE -Iinclude -o $@ $< -ldl -lpthread -rdynamic

$(B)/tests/%: tests/programs/%.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O0 -g -fno-omit-frame-pointer -fno-builtin -Iinclude -o $@ $< -ldl -lpthread -rdynamic

# A library the dlopen test loads and unloads.
$(B)/tests/libdlplugin.so: tests/programs/plugin/dlplugin.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -fno-omit-frame-pointer -fPIC -shared -o $@ $<

# Optimised: main gets a .cold part, and its line table ends in a row of no
# length before _start.
$(B)/tests/cxx_cold_main: tests/programs/cxx_cold_main.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O2 -g -o $@ $<

# Optimised: most of its stacks expand into inline chains.
$(B)/tests/cxx_inline_sites: tests/programs/cxx_inline_sites.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O2 -g -o $@ $<

# A library whose destructor frees what its constructor allocated.
$(B)/tests/libdtorplugin.so: tests/programs/plugin/dtorplugin.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -fno-omit-frame-pointer -fPIC -shared -o $@ $<

# Two builds of one library, loaded one after the other at one address.
$(B)/tests/libdlswap%.so: tests/programs/plugin/dlswap.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -fno-omit-frame-pointer -fPIC -shared \
		-DSWAP_FN=$(if $(filter 1,$*),swap_one_alloc,swap_two_alloc) -o $@ $<

$(B)/unit/%: tests/unit/%.c $(CLI_LIB_OBJ) $(wildcard common/*.h) $(wildcard tests/include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -I. -Itests/include -o $@ $< $(CLI_LIB_OBJ) $(CLI_LIBS)

# The function profiler's benchmark: instrumented like its users' programs.
$(B)/bench/fn_%: bench/workloads/fn_%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -D_GNU_SOURCE -finstrument-functions -o $@ $< -lpthread

# heaptrail.h's cost without the agent: the same allocator with and without
# its annotations.
$(B)/bench/api_arena: bench/workloads/api_arena.c include/heaptrail.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -D_GNU_SOURCE -Iinclude -o $@ $<

$(B)/bench/api_arena_bare: bench/workloads/api_arena.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -D_GNU_SOURCE -DHEAPTRAIL_BARE -o $@ $<

# The floors of bench/floor.py: the least an interposer can do.
$(B)/bench/floor/%.so: bench/floor/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(WARN) -D_GNU_SOURCE -fno-builtin -shared -fPIC -o $@ $<

$(B)/bench/%: bench/workloads/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -D_GNU_SOURCE -o $@ $< -lpthread

$(B)/bench/%: bench/workloads/%.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O2 -g -o $@ $< -lpthread

# The reader's fuzz target: libFuzzer binary (make fuzz) and a plain replay
# driver that runs the corpus in make check.
FUZZ_OBJ := $(filter-out $(B)/asan/cli/main.o,$(ASAN_CLI_OBJ))
$(B)/fuzz/fuzz_reader: tests/fuzz/fuzz_reader.c $(CLI_SRC) $(PB_GEN) $(HTML_GEN)
	@mkdir -p $(dir $@)
	clang $(filter-out -Werror,$(BASE_CFLAGS)) -I. -g -O1 -fsanitize=fuzzer,address,undefined -o $@ tests/fuzz/fuzz_reader.c $(filter-out cli/main.c,$(CLI_SRC)) $(PB_GEN) $(HTML_GEN) $(CLI_LIBS)

$(B)/fuzz/replay_reader: tests/fuzz/fuzz_reader.c tests/fuzz/replay_driver.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -I. -O1 -g $(SAN) -o $@ tests/fuzz/fuzz_reader.c tests/fuzz/replay_driver.c $(FUZZ_OBJ) $(CLI_LIBS)

fuzz: $(B)/fuzz/fuzz_reader

programs: $(PROGS) $(B)/tests/libdlplugin.so $(B)/tests/libdlswap1.so $(B)/tests/libdlswap2.so $(B)/tests/libdtorplugin.so
FLOORS := $(patsubst bench/floor/%.c,$(B)/bench/floor/%.so,$(wildcard bench/floor/*.c))
bench: all $(BENCHES) $(B)/bench/api_arena_bare $(FLOORS)

check: all $(B)/asan/heaptrail programs $(B)/examples/leaky $(B)/bench/threads $(B)/bench/many_live $(UNITS) $(B)/fuzz/replay_reader
	@sh tests/run.sh

# The API is a header only (weak symbols resolved against the agent), so
# heaptrail.pc carries Cflags and no Libs.
$(B)/heaptrail.pc: heaptrail.pc.in
	@mkdir -p $(dir $@)
	sed -e 's|@prefix@|$(prefix)|' -e 's|@includedir@|$(includedir)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

install: all $(B)/heaptrail.pc
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(libdir)/heaptrail $(DESTDIR)$(includedir) $(DESTDIR)$(libdir)/pkgconfig
	install -m 755 $(B)/heaptrail $(DESTDIR)$(bindir)/heaptrail
	install -m 755 $(B)/libheaptrail.so $(DESTDIR)$(libdir)/heaptrail/libheaptrail.so
	install -m 644 include/heaptrail.h $(DESTDIR)$(includedir)/heaptrail.h
	install -m 644 $(B)/heaptrail.pc $(DESTDIR)$(libdir)/pkgconfig/heaptrail.pc
	if [ -f docs/heaptrail.1 ]; then install -d $(DESTDIR)$(mandir)/man1 && install -m 644 docs/heaptrail.1 $(DESTDIR)$(mandir)/man1/; fi
	install -d $(DESTDIR)$(docdir)
	install -m 644 README.md docs/*.md $(DESTDIR)$(docdir)/
	install -d $(DESTDIR)$(bashcompdir) $(DESTDIR)$(zshcompdir)
	install -m 644 completion/heaptrail.bash $(DESTDIR)$(bashcompdir)/heaptrail
	install -m 644 completion/_heaptrail $(DESTDIR)$(zshcompdir)/_heaptrail

clean:
	rm -rf $(B)

.PHONY: all check install clean fuzz programs bench

# The README's example program.
$(B)/examples/%: examples/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -D_GNU_SOURCE -Iinclude -o $@ $<
