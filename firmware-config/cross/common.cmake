# Shared part of the cross toolchain files (arm64.cmake, armhf.cmake): the
# cross compiler from Debian (g++-<triplet>) with its own glibc/libstdc++, and
# a sysroot of Debian's target libraries made by sysroot.sh
# (-DEDGESYNC_SYSROOT=<dir>, the Makefile passes it). The sysroot holds no C
# library headers, so it is not passed as --sysroot: its include directories
# come before Debian's cross compiler's last one, the build machine's
# /usr/include (-isystem), and its libraries are linked with -L/-rpath-link.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${EDGESYNC_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${EDGESYNC_TRIPLET}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${EDGESYNC_TRIPLET})

# try_compile projects (e.g. find_package(Threads)) re-read this file.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES EDGESYNC_SYSROOT)
if(NOT EDGESYNC_SYSROOT AND DEFINED ENV{EDGESYNC_SYSROOT})
  set(EDGESYNC_SYSROOT $ENV{EDGESYNC_SYSROOT})
endif()
if(NOT EDGESYNC_SYSROOT OR NOT EXISTS ${EDGESYNC_SYSROOT}/usr/lib/${EDGESYNC_TRIPLET})
  message(FATAL_ERROR "EDGESYNC_SYSROOT='${EDGESYNC_SYSROOT}' is not a sysroot for ${EDGESYNC_TRIPLET}; "
                      "run `make cross ARCH=...` (it runs firmware-config/cross/sysroot.sh)")
endif()
set(_es_lib ${EDGESYNC_SYSROOT}/usr/lib/${EDGESYNC_TRIPLET})

set(_es_inc "-isystem ${EDGESYNC_SYSROOT}/usr/include/${EDGESYNC_TRIPLET} -isystem ${EDGESYNC_SYSROOT}/usr/include")
set(CMAKE_C_FLAGS_INIT "${_es_inc} ${EDGESYNC_EXTRA_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${_es_inc} ${EDGESYNC_EXTRA_FLAGS}")
set(_es_link "-L${_es_lib} -Wl,-rpath-link,${_es_lib}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_es_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_es_link}")

# Libraries, headers and CMake packages only from the sysroot; programs (flatc)
# from the build machine: flatc output is the same on every architecture and
# Debian ships the same FlatBuffers version for all of them.
set(CMAKE_FIND_ROOT_PATH ${EDGESYNC_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads only the sysroot's .pc files and prefixes their paths.
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${EDGESYNC_SYSROOT})
set(ENV{PKG_CONFIG_LIBDIR} "${_es_lib}/pkgconfig:${EDGESYNC_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# ctest (fuzz corpus replays, gtest discovery) runs target programs under
# qemu-user with the sysroot as prefix: loader, glibc and every library are
# Debian's target packages (the sysroot holds their run-time parts).
find_program(EDGESYNC_QEMU ${EDGESYNC_QEMU_NAME})
if(EDGESYNC_QEMU)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EDGESYNC_QEMU} -L ${EDGESYNC_SYSROOT})
endif()
