# Cross builds for the boards, included by the top-level Makefile.
#
#   make cross ARCH=arm64|armhf      build/$(ARCH)/edgesync
#   make test-arm ARCH=arm64|armhf   unit tests + fuzz corpus replays under qemu-user
#   make deps-cross [ARCH=...]       compilers, qemu and the sysroot (part of `make deps`)
#
# Libraries come from a sysroot of Debian's $(ARCH) packages
# (firmware-config/cross/sysroot.sh, package list in packages.txt), so nothing
# of the target architecture is installed on the build machine.

CROSS_ARCHES := arm64 armhf
CROSS_DIR = $(BUILD)/$(ARCH)
SYSROOT ?= $(BUILD)/sysroot/$(ARCH)
CROSS_QEMU = $(if $(filter arm64,$(ARCH)),qemu-aarch64,qemu-arm)
# How a target program runs here: loader and every library from the sysroot
# (Debian's target packages, as on a board), never the host's multiarch ones.
CROSS_RUN = $(CROSS_QEMU) -L $(abspath $(SYSROOT))
CROSS_FUZZ_TARGETS = $(basename $(notdir $(wildcard tests/fuzz/*_fuzz.cc)))

.PHONY: deps-cross cross-check-arch cross-configure

deps: deps-cross-all

.PHONY: deps-cross-all
deps-cross-all:
	@./$(DEPS) cross-arm64 cross-armhf
	@for a in $(CROSS_ARCHES); do \
	  ./firmware-config/cross/sysroot.sh $$a $(BUILD)/sysroot/$$a || exit 1; done

cross-check-arch:
	@case "$(ARCH)" in arm64|armhf) ;; \
	  *) echo "ARCH must be one of: $(CROSS_ARCHES) (got '$(ARCH)')" >&2; exit 2 ;; esac

deps-cross: cross-check-arch
	@./$(DEPS) build cross-$(ARCH)
	@./firmware-config/cross/sysroot.sh $(ARCH) $(SYSROOT)

# (Re)configures when there is no build tree yet, a toolchain file changed
# (compiler flags are taken from it only when the cache is created) or the
# sysroot's package list did (options such as EDGESYNC_POSTGRESQL default to
# what the sysroot had at the first configure, and stay cached).
cross-configure: deps-cross
	@if [ ! -f $(CROSS_DIR)/CMakeCache.txt ] || \
	    { [ ! -f $(CROSS_DIR)/build.ninja ] && [ ! -f $(CROSS_DIR)/Makefile ]; } || \
	    [ -n "$$(find firmware-config/cross \( -name '*.cmake' -o -name packages.txt \) -newer $(CROSS_DIR)/CMakeCache.txt)" ]; then \
	  rm -f $(CROSS_DIR)/CMakeCache.txt; \
	  cmake -S . -B $(CROSS_DIR) -G "$(CMAKE_GENERATOR)" \
	    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGESYNC_BENCH=OFF \
	    -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/firmware-config/cross/$(ARCH).cmake \
	    -DEDGESYNC_SYSROOT=$(abspath $(SYSROOT)) || exit 1; \
	fi

cross: cross-configure
	cmake --build $(CROSS_DIR) --target edgesync -j $(JOBS)
	@file $(CROSS_DIR)/edgesync

# The unit tests and fuzz replays of the target build, run under qemu-user.
# Integration tests (real Mosquitto and processes on the build machine) run in
# `make test` only. Each layer's unit test program (unit_<layer>_tests)
# runs as JOBS GoogleTest shards side by side (GTEST_TOTAL_SHARDS/
# GTEST_SHARD_INDEX; qemu-user passes the environment on): one emulated
# process keeps one core busy, and under qemu the suite takes about ten
# times its native time. Each shard's output goes to
# $(CROSS_DIR)/<program>.shard<N>.log, printed whole when it fails.
test-arm: cross-configure
	cmake --build $(CROSS_DIR) --target unit_tests $(CROSS_FUZZ_TARGETS) -j $(JOBS)
	$(if $(CROSS_FUZZ_TARGETS),cd $(CROSS_DIR) && ctest --output-on-failure -j $(JOBS) -R '^fuzz_corpus\.')
	@cd $(CROSS_DIR) && rm -f tests/unit_*.shard*.log && rc=0 && \
	  for prog in tests/unit_*_tests; do \
	    pids=""; \
	    for i in $$(seq 0 $$(( $(JOBS) - 1 ))); do \
	      GTEST_TOTAL_SHARDS=$(JOBS) GTEST_SHARD_INDEX=$$i $(CROSS_RUN) $$prog >$$prog.shard$$i.log 2>&1 & \
	      pids="$$pids $$!"; \
	    done; \
	    i=0; for p in $$pids; do \
	      if wait $$p; then tail -n 1 $$prog.shard$$i.log | sed "s|^|$$prog shard $$i: |"; \
	      else rc=1; echo "== $$prog shard $$i of $(JOBS) FAILED:"; cat $$prog.shard$$i.log; fi; \
	      i=$$((i + 1)); \
	    done; \
	  done; exit $$rc
