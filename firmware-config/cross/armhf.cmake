# Cross toolchain for 32-bit Raspberry Pi OS / Debian armhf: ARMv7, hard-float
# (Pi 2 and later; not ARMv6 boards such as Pi Zero/1).
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(EDGESYNC_TRIPLET arm-linux-gnueabihf)
set(EDGESYNC_QEMU_NAME qemu-arm)
# 64-bit file offsets and inode numbers (stat, statvfs, readdir, lseek):
# without them a 32-bit build gets EOVERFLOW from stat/statvfs of large files or
# disks, and readdir ends early on directories with 64-bit offsets (ext4 under
# a 64-bit kernel: every directory under qemu-arm). None of the Debian libraries
# edgesync links passes off_t or struct stat through its API.
set(EDGESYNC_EXTRA_FLAGS "-D_FILE_OFFSET_BITS=64")
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
