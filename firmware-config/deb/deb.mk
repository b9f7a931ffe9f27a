# Debian packages, included by the top-level Makefile.
#
#   make deb ARCH=amd64|arm64|armhf   build/deb/edgesync_<version>_<arch>.deb
#
# amd64 packages the native build (build/edgesync), arm64 and armhf the cross
# builds (`make cross`, build/<arch>/edgesync), whose dependencies come from
# the sysroot (firmware-config/deb/build-deb.sh). DEB_VERSION defaults to the
# project's version in CMakeLists.txt; DEB_DIR is where the .deb goes.

DEB_VERSION ?= $(shell grep -m1 -o 'edgesync VERSION [0-9.]*' CMakeLists.txt | cut -d' ' -f3)
DEB_DIR ?= $(BUILD)/deb
DEB_HOST_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB_NATIVE = $(filter $(DEB_HOST_ARCH),$(ARCH))

.PHONY: deb
deb: $(if $(DEB_NATIVE),all,cross)
	@./$(DEPS) deb
	./firmware-config/deb/build-deb.sh $(ARCH) $(if $(DEB_NATIVE),$(BUILD)/edgesync,$(CROSS_DIR)/edgesync) \
	  $(DEB_DIR) $(DEB_VERSION) $(if $(DEB_NATIVE),,$(SYSROOT))
