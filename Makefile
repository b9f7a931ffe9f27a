# edgesync: the one entry point. Every target installs what it needs first
# (firmware-config/deps.sh is idempotent and quick when nothing is missing).
#
#   make              build build/edgesync
#   make test         the thread-safety check, then unit + integration tests
#                     (real brokers), the README's test command
#   make thread-safety  Clang's thread-safety analysis of the lock rules (syntax only)
#   make demo         run the gateway demo on loopback
#   make cross ARCH=arm64|armhf, make test-arm ARCH=arm64|armhf
#   make deb ARCH=amd64|arm64|armhf   Debian package in build/deb/
#   make bench [BENCH=part], make fuzz [FUZZ_SECONDS=n]
#   make bench-previous [PREVIOUS=commit]   storage, ingest, region and drain figures against an earlier build
#   make soak [SOAK_SECONDS=600] [SOAK_SEED=n] [SOAK_PG_REGIONS=0..3]
#                                                seeded fault soak, 3 regions x 6 gateways (root)
#   make test SANITIZE=address,undefined   the same tests, ASan+UBSan build in build-asan/
#   make test SANITIZE=thread              ThreadSanitizer build in build-tsan/
#   make deps, make clean

# A sanitizer build gets its own tree so it never mixes objects with build/.
SANITIZE ?=
ifneq ($(SANITIZE),)
BUILD ?= build-$(if $(findstring thread,$(SANITIZE)),tsan,asan)
SANITIZE_FLAGS := -DEDGESYNC_SANITIZE=$(SANITIZE) -DEDGESYNC_BENCH=OFF
endif
BUILD ?= build
JOBS ?= $(shell nproc)
# Tests at twice the build's parallelism: most of a test's time is spent
# waiting on brokers, processes and timeouts, not on a core, and none
# asserts a timing.
TEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))
ARCH ?= arm64
BENCH ?=
FUZZ_SECONDS ?= 30
SOAK_SECONDS ?= 600
SOAK_SEED ?=
SOAK_PG_REGIONS ?=
CMAKE_GENERATOR ?= $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")
# ccache, where installed, makes rebuilds after a clean (or in a second
# checkout) cheap; without it the compiler runs directly.
CCACHE_FLAG := $(shell command -v ccache >/dev/null 2>&1 && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
DEPS = firmware-config/deps.sh

.PHONY: all deps configure thread-safety test unit integration demo bench bench-previous fuzz soak cross test-arm clean

all: configure
	cmake --build $(BUILD) --target edgesync -j $(JOBS)

deps:
	@./$(DEPS) build test analysis demo fuzz deb cross-arm64 cross-armhf

configure:
	@./$(DEPS) build test
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -G "$(CMAKE_GENERATOR)" -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CCACHE_FLAG) $(SANITIZE_FLAGS)

# Syntax only, with the build's flags: a broken lock rule fails the tests
# before anything is built. A sanitizer tree's flags change nothing the
# analysis sees, so its make test leaves the step to build/'s.
thread-safety: configure
	@./$(DEPS) analysis
	cmake --build $(BUILD) --target thread_safety -j $(JOBS)

test: configure $(if $(SANITIZE),,thread-safety)
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) --timeout 900

unit: configure
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) -L unit

integration: configure
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) -L integration

demo: configure
	@./$(DEPS) demo
	cmake --build $(BUILD) --target edgesync sensor_sim demo_summary -j $(JOBS)
	./tests/demo/run.sh $(BUILD)/edgesync

bench: configure
	cmake --build $(BUILD) -j $(JOBS)
	./tests/bench/run.sh $(BUILD) "$(BENCH)"

# The storage, ingest and region benchmarks with an earlier commit's program
# as the baseline of their "against the previous binary" rows
# (tests/bench/previous.sh).
PREVIOUS ?= HEAD~1
bench-previous: configure
	cmake --build $(BUILD) -j $(JOBS)
	./tests/bench/previous.sh $(BUILD) "$(PREVIOUS)" "$(CMAKE_GENERATOR)" "$(CCACHE_FLAG)"

# Prints its seed; the same SOAK_SEED, SOAK_SECONDS and SOAK_PG_REGIONS
# replay the same faults. SOAK_PG_REGIONS: how many regions (from region0
# on) keep their hub store on a PostgreSQL server the soak starts.
# Summary on stdout, details in $(BUILD)/soak/report.json.
soak: configure
	cmake --build $(BUILD) --target edgesync es_acked_sensor edgesync_soak -j $(JOBS)
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_SEED=$(SOAK_SEED) SOAK_PG_REGIONS=$(SOAK_PG_REGIONS) \
	  $(BUILD)/tests/soak/edgesync_soak --out $(BUILD)/soak

fuzz:
	@./$(DEPS) build fuzz
	./tests/fuzz/run.sh $(BUILD)/fuzz $(FUZZ_SECONDS)

include firmware-config/cross/cross.mk
include firmware-config/deb/deb.mk

clean:
	rm -rf $(BUILD)
