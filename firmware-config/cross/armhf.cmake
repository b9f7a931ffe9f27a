# Cross toolchain for 32-bit Raspberry Pi OS / Debian armhf: ARMv7, hard-float
# (Pi 2 and later; not ARMv6 boards such as Pi Zero/1).
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(EDGESYNC_TRIPLET arm-linux-gnueabihf)
set(EDGESYNC_QEMU_NAME qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
