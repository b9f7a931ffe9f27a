# Cross toolchain for 64-bit Raspberry Pi OS / Debian arm64 (Pi 3, 4, 5).
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(EDGESYNC_TRIPLET aarch64-linux-gnu)
set(EDGESYNC_QEMU_NAME qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
