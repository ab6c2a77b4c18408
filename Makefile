# tilefs build. `make` builds build/tilefs; `make check` runs every test.
# SANITIZE=address,undefined builds everything with those sanitizers.

VERSION := 0.1.0
PKGS := fuse3 libcurl libtiff-4 sqlite3 openssl
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

# The library: every layer of cache/, plus what the tools share with the
# mount (tools/options.c). The daemon, every tool and every unit test link it.
LIB_SRC := $(wildcard cache/*/*.c) tools/options.c
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libtilefs.a

DAEMON_SRC := fs/main.c fs/mount.c fs/metrics.c $(filter-out $(LIB_SRC),$(wildcard tools/*.c))
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(BUILD)/%.o)

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/%)

all: $(BUILD)/tilefs $(UNIT_BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(LIB): $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/tilefs: $(DAEMON_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/test_%: $(BUILD)/tests/unit/test_%.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The layer rule first, unit tests again under ASan/UBSan, then everything
# (unit + bats).
check: all layers
	$(MAKE) --no-print-directory BUILD=build-sanitize SANITIZE=address,undefined unit
	tests/run

unit: $(UNIT_BIN)
	@for t in $(UNIT_BIN); do $$t > $$t.log 2>&1 || { cat $$t.log; echo "FAILED: $$t"; exit 1; }; done
	@echo "unit tests passed under $(BUILD)"

# Every #include follows the dependency rule (tests/check-layers).
layers:
	tests/check-layers

demo: all
	examples/demo.sh

# Benchmarks: tilefs beside local disk, GDAL /vsicurl/ and rclone, one run.
# bench also compares the prefetch policies on cold random chips, and tilefs
# warm's rate with parallel curl and rclone copy
bench: all
	tests/bench/run
	tests/bench/run --workloads chips --prefetch none,neighbors,row,object \
		--contestants vsicurl,vsicurl-tuned,tilefs-cold/none,tilefs-cold/neighbors,tilefs-cold/row,tilefs-cold/object
	tests/bench/run warm --jobs 8,16,32

bench-warm: all
	tests/bench/run warm

bench-quick: all
	tests/bench/run --quick

# The tile-map parser under libFuzzer (clang), seeded from the corpus:
# make fuzz FUZZ_SECONDS=600
FUZZ_SECONDS ?= 60
fuzz:
	tests/fuzz/run $(FUZZ_SECONDS)

valgrind: all
	for t in $(UNIT_BIN); do valgrind -q --error-exitcode=1 --leak-check=full $$t || exit 1; done

clean:
	rm -rf build build-sanitize

.PHONY: all check layers unit demo bench bench-quick bench-warm valgrind fuzz clean
# keep the unit tests' objects (pattern-rule intermediates) between builds
.SECONDARY:
-include $(LIB_OBJ:.o=.d) $(DAEMON_OBJ:.o=.d) $(UNIT_SRC:%.c=$(BUILD)/%.d)
