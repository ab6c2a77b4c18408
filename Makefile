# tilefs build. `make` builds build/tilefs; `make check` runs every test.
# SANITIZE=address,undefined builds everything with those sanitizers,
# SANITIZE=thread with ThreadSanitizer (`make tsan`: the engine's tests).

VERSION := 0.1.0
PKGS := fuse3 libcurl libtiff-4 sqlite3 openssl json-c
CC ?= cc
BUILD ?= build

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))

CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -DTILEFS_VERSION='"$(VERSION)"' \
	  -Wall -Wextra -Wmissing-prototypes -Wstrict-prototypes -Wshadow \
	  -Wno-unused-parameter -I. $(PKG_CFLAGS)
LDLIBS += $(PKG_LIBS) -lpthread
ifdef SANITIZE
CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
endif

# The library: every layer of cache/ (and the folders inside a layer, such
# as cache/origin/providers/). The binary and every unit test link it.
# The command line's own parts stay out of it, the option table
# (tools/options.c) and the stack it builds (tools/stack.c) both: they read
# argv and speak to the user, and only the commands use them; a unit test of
# one links its object by name, as the FUSE front's tests do.
LIB_SRC := $(wildcard cache/*/*.c cache/*/*/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libtilefs.a

# The binary: the FUSE front (fs/) and the command line (tools/: main() and
# every command, mount included).
DAEMON_SRC := $(wildcard fs/*.c tools/*.c)
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(BUILD)/%.o)

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/%)
# What `make unit` runs: every unit test, or those UNIT_TESTS names
# (UNIT_TESTS='test_engine test_fetch').
UNIT_RUN := $(if $(UNIT_TESTS),$(UNIT_TESTS:%=$(BUILD)/%),$(UNIT_BIN))

all: $(BUILD)/tilefs $(UNIT_BIN) $(BUILD)/fake_tilefs $(BUILD)/fault_shim.so \
	$(BUILD)/old_kernel_shim.so $(BUILD)/python.ok

# The Python package (import tilefs, tilefs.torch), installed as it is:
# the build checks that it compiles (tests/bats/36-hint.bats and
# 99-packaging.bats run it).
PY_SRC := $(wildcard tools/python/tilefs/*.py)
$(BUILD)/python.ok: $(PY_SRC)
	@mkdir -p $(dir $@)
	python3 -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' $^
	@touch $@

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(LIB): $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/tilefs: $(DAEMON_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/test_%: $(BUILD)/tests/unit/test_%.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# the unit tests of the FUSE front's own parts
$(BUILD)/test_inodes: $(BUILD)/tests/unit/test_inodes.o $(BUILD)/fs/inodes.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/test_passthrough: $(BUILD)/tests/unit/test_passthrough.o $(BUILD)/fs/passthrough.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
# ... and of the command line's
$(BUILD)/test_options: $(BUILD)/tests/unit/test_options.o $(BUILD)/tools/options.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/test_warm_list: $(BUILD)/tests/unit/test_warm_list.o $(BUILD)/tools/warm_list.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# A FUSE file system passing itself off as tilefs, for the tests of inspect
# (tests/lib/fake_tilefs.c): FUSE only, none of tilefs.
$(BUILD)/fake_tilefs: $(BUILD)/tests/lib/fake_tilefs.o
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs fuse3)

# The fault tests' LD_PRELOAD library (I/O errors on chosen files); never
# built with the sanitizers, as it is loaded before their runtime.
$(BUILD)/fault_shim.so: tests/lib/fault_shim.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -fPIC -shared -o $@ $< -ldl

# The mmap tests' LD_PRELOAD library: the FUSE INIT of Linux 6.1 on a newer
# kernel (tests/lib/old_kernel_shim.c); never with the sanitizers.
$(BUILD)/old_kernel_shim.so: tests/lib/old_kernel_shim.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -fPIC -shared -o $@ $< -ldl

# The layer rule first, unit tests again under ASan/UBSan, the engine's
# under TSan, then everything (unit + bats). The builds use every core;
# the tests run one at a time.
NPROC := $(shell nproc 2>/dev/null || echo 1)
check:
	$(MAKE) --no-print-directory -j$(NPROC) all
	$(MAKE) --no-print-directory layers
	$(MAKE) --no-print-directory -j$(NPROC) BUILD=build-sanitize SANITIZE=address,undefined unit
	$(MAKE) --no-print-directory -j$(NPROC) tsan
	tests/run

# Each test's output goes to its .log, shown when it fails. A sanitizer's
# report fails it: UBSan and TSan stop at the first (halt_on_error; TSan
# exits 66), ASan always does, and a report a test's child process made,
# whose status the test may not look at, is found in the log.
SANITIZER_REPORT := -e '^WARNING: ThreadSanitizer' -e 'runtime error:' \
	-e '^==[0-9]*==ERROR: [A-Za-z]*Sanitizer'
unit: $(UNIT_RUN)
	@for t in $(UNIT_RUN); do \
		UBSAN_OPTIONS=$${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
		TSAN_OPTIONS=$${TSAN_OPTIONS:-halt_on_error=1 exitcode=66 second_deadlock_stack=1} \
			$$t > $$t.log 2>&1 && ! grep -q $(SANITIZER_REPORT) $$t.log || \
			{ cat $$t.log; echo "FAILED: $$t"; exit 1; }; \
	done
	@echo "unit tests passed under $(BUILD)"

# The engine's unit tests, those whose threads meet (fetch threads, the
# persist and seal threads, readers, warmers), and those of the threads
# under it (the transport's, renewal, the namespace's revalidation ahead,
# the index shared by threads), built with ThreadSanitizer in build-tsan
# at -O1 (fast enough for every check, its stacks still readable): a
# report fails them. Their checks whose child processes start threads are
# skipped there, each with a "# SKIP" line saying why (tests/unit/check.h).
# No report of tilefs code is suppressed: a race is fixed.
TSAN_TESTS := test_engine test_written test_fetch test_warm_evict test_evict test_unit \
	test_hint test_edges test_http_background test_http_stop test_http_sink test_renewal \
	test_namespace test_index
tsan:
	CFLAGS='-O1 -g' $(MAKE) --no-print-directory BUILD=build-tsan SANITIZE=thread \
		UNIT_TESTS='$(TSAN_TESTS)' unit

# Every #include follows the dependency rule (tests/check-layers), and the
# files of each folder call only files below them (tests/check-calls, from
# the object files' symbols).
layers: calls
	tests/check-layers

calls: $(LIB_OBJ) $(DAEMON_OBJ)
	tests/check-calls $(BUILD)

demo: all
	examples/demo.sh

# Benchmarks: tilefs beside local disk, GDAL /vsicurl/ and rclone, one run,
# over https (BENCH_ARGS='--scheme http' for plain http), with $(BUILD)'s
# tilefs; throughput (issue 44) measures https and http both. bench also
# compares the prefetch policies on cold random chips, and tilefs warm's
# rate with parallel curl and rclone copy. Every step runs even when one
# fails (wrong bytes, a failing tilefs); then make fails with the last
# failure's status.
BENCH_ARGS ?=
BENCH_TILEFS = $(abspath $(BUILD)/tilefs)
bench: all
	rc=0; \
	tests/bench/run --tilefs $(BENCH_TILEFS) $(BENCH_ARGS) || rc=$$?; \
	tests/bench/run --tilefs $(BENCH_TILEFS) $(BENCH_ARGS) --workloads chips \
		--prefetch none,neighbors,row,object \
		--contestants vsicurl,vsicurl-tuned,tilefs-cold/none,tilefs-cold/neighbors,tilefs-cold/row,tilefs-cold/object \
		|| rc=$$?; \
	tests/bench/run warm --tilefs $(BENCH_TILEFS) $(BENCH_ARGS) --jobs 8,16,32 || rc=$$?; \
	TILEFS=$(BENCH_TILEFS) $(MAKE) --no-print-directory bench-cluster || rc=$$?; \
	exit $$rc

bench-warm: all
	tests/bench/run warm --tilefs $(BENCH_TILEFS) $(BENCH_ARGS)

# Three hosts through one cache tier against one host without (issue 15):
# exact ranges and slices with one reader per host, exact ranges with four.
bench-cluster: all
	tests/bench/cluster --procs 1
	tests/bench/cluster --procs 1 --slice 1M
	tests/bench/cluster --procs 4

bench-quick: all
	tests/bench/run --quick --tilefs $(BENCH_TILEFS) $(BENCH_ARGS)

# The parsers of untrusted bytes under libFuzzer (clang; tests/fuzz/run
# lists them): the tile map for FUZZ_SECONDS, seeded from the corpus, then
# every other target for TILEFS_FUZZ_BRIEF_SECONDS (5) each:
# make fuzz FUZZ_SECONDS=600
FUZZ_SECONDS ?= 60
fuzz:
	tests/fuzz/run $(FUZZ_SECONDS)

# The stress test (tests/stress/run): mounts and warms on one small cache
# against an origin that fails, with kill -9 now and then, for SECONDS.
SECONDS ?= 600
stress: all
	TILEFS=$(abspath $(BUILD)/tilefs) tests/stress/run --seconds $(SECONDS)

valgrind: all
	for t in $(UNIT_BIN); do valgrind -q --error-exitcode=1 --leak-check=full $$t || exit 1; done

# tilefs(1) comes from the option table --help prints (tilefs --help-man).
man: $(BUILD)/man/tilefs.1

$(BUILD)/man/tilefs.1: $(BUILD)/tilefs
	@mkdir -p $(dir $@)
	$(BUILD)/tilefs --help-man >$@.tmp && mv $@.tmp $@

# docs/OPTIONS.md comes from the same table (tilefs --help-markdown), and
# the part of docs/CONFIGURATION.md between its two credentials-table
# markers from the credentials table that prints tilefs(1)'s ENVIRONMENT
# (tilefs --help-credentials-markdown, markers included);
# tests/bats/10-cli.bats checks that the committed files are what they print.
docs: $(BUILD)/tilefs
	$(BUILD)/tilefs --help-markdown >docs/OPTIONS.md.tmp && mv docs/OPTIONS.md.tmp docs/OPTIONS.md
	$(BUILD)/tilefs --help-credentials-markdown >$(BUILD)/credentials.md
	@test "$$(grep -c -e '^<!-- BEGIN credentials table' -e '^<!-- END credentials table' \
		docs/CONFIGURATION.md)" = 2 || \
		{ echo "docs/CONFIGURATION.md: not one BEGIN and one END credentials table line"; exit 1; }
	awk -v part=$(BUILD)/credentials.md \
		'/^<!-- BEGIN credentials table/ { while ((getline line <part) > 0) print line; skip = 1; next } \
		 /^<!-- END credentials table/ { skip = 0; next } !skip' \
		docs/CONFIGURATION.md >docs/CONFIGURATION.md.tmp && \
		mv docs/CONFIGURATION.md.tmp docs/CONFIGURATION.md

# What the .deb holds (packaging/debian/rules runs this with PREFIX=/usr):
# the README and docs/ too, beside each other as in the tree, so their links
# lead where they do here.
PREFIX ?= /usr/local
SYSTEMD_UNIT_DIR ?= /lib/systemd/system
PYTHON_DIR ?= $(PREFIX)/lib/python3/dist-packages
install: $(BUILD)/tilefs $(BUILD)/man/tilefs.1
	install -D -m 755 $(BUILD)/tilefs $(DESTDIR)$(PREFIX)/bin/tilefs
	sed 's|/usr/bin/tilefs|$(PREFIX)/bin/tilefs|' packaging/mount.tilefs >$(BUILD)/mount.tilefs
	install -D -m 755 $(BUILD)/mount.tilefs $(DESTDIR)/sbin/mount.tilefs
	install -D -m 644 $(BUILD)/man/tilefs.1 $(DESTDIR)$(PREFIX)/share/man/man1/tilefs.1
	install -D -m 644 packaging/mount.tilefs.8 $(DESTDIR)$(PREFIX)/share/man/man8/mount.tilefs.8
	sed 's|/usr/bin/tilefs|$(PREFIX)/bin/tilefs|' packaging/systemd/tilefs-warm@.service \
		>$(BUILD)/tilefs-warm@.service
	install -D -m 644 $(BUILD)/tilefs-warm@.service \
		$(DESTDIR)$(SYSTEMD_UNIT_DIR)/tilefs-warm@.service
	install -D -m 644 packaging/example.conf $(DESTDIR)$(PREFIX)/share/tilefs/example.conf
	install -D -m 644 packaging/systemd/mnt-eo.mount \
		$(DESTDIR)$(PREFIX)/share/doc/tilefs/examples/mnt-eo.mount
	install -D -m 644 examples/torch_loader.py \
		$(DESTDIR)$(PREFIX)/share/doc/tilefs/examples/torch_loader.py
	for f in $(PY_SRC); do \
		install -D -m 644 $$f $(DESTDIR)$(PYTHON_DIR)/tilefs/$$(basename $$f) || exit 1; \
	done
	install -D -m 644 packaging/bash-completion/tilefs \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/tilefs
	install -D -m 644 README.md $(DESTDIR)$(PREFIX)/share/doc/tilefs/README.md
	install -d $(DESTDIR)$(PREFIX)/share/doc/tilefs/docs
	install -m 644 docs/*.md docs/*.png $(DESTDIR)$(PREFIX)/share/doc/tilefs/docs/

# build/tilefs_VERSION_ARCH.deb, built by dpkg-buildpackage from a copy of
# the tree with packaging/debian as debian/, then checked by lintian.
DEB_TREE := $(BUILD)/deb/tilefs-$(VERSION)
deb:
	@test "$$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)" = "$(VERSION)" || \
		{ echo "packaging/debian/changelog: its version is not $(VERSION)"; exit 1; }
	rm -rf $(BUILD)/deb
	mkdir -p $(DEB_TREE)
	tar -c --exclude-vcs --exclude='./build*' --exclude=./tests/.cache --exclude=./results \
		--exclude=__pycache__ -f - . | tar -x -C $(DEB_TREE) -f -
	cp -R packaging/debian $(DEB_TREE)/debian
	cd $(DEB_TREE) && DEB_BUILD_OPTIONS=noddebs dpkg-buildpackage -us -uc -b
	mv $(BUILD)/deb/tilefs_$(VERSION)_*.deb $(BUILD)/
	@if command -v lintian >/dev/null; then \
		echo "lintian $(BUILD)/tilefs_$(VERSION)_*.deb"; \
		lintian --fail-on error $(BUILD)/tilefs_$(VERSION)_*.deb; \
	fi

clean:
	rm -rf build build-sanitize build-tsan

.PHONY: calls all check layers unit tsan stress demo bench bench-quick bench-warm bench-cluster valgrind fuzz clean man docs install deb
# keep the unit tests' objects (pattern-rule intermediates) between builds
.SECONDARY:
-include $(LIB_OBJ:.o=.d) $(DAEMON_OBJ:.o=.d) $(UNIT_SRC:%.c=$(BUILD)/%.d)
