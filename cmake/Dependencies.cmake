# Every library comes from Debian's packages (see firmware-config/deps.sh).
# pkg-config where Debian ships .pc files; plain find_* where it does not
# (Paho has no .pc file; toml11, CLI11 and nlohmann-json are header-only).
find_package(PkgConfig REQUIRED)
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(SPDLOG REQUIRED IMPORTED_TARGET spdlog)
# fmt on its own for the PostgreSQL module, which formats its log lines but
# writes them through the program's logger (store/pg_module.h).
pkg_check_modules(FMT REQUIRED IMPORTED_TARGET fmt)

find_library(PAHO_MQTTPP_LIB paho-mqttpp3 REQUIRED)
find_library(PAHO_MQTT_C_LIB paho-mqtt3as REQUIRED)
add_library(paho_mqtt INTERFACE)
target_link_libraries(paho_mqtt INTERFACE ${PAHO_MQTTPP_LIB} ${PAHO_MQTT_C_LIB})

find_path(TOML11_INCLUDE toml.hpp REQUIRED)
add_library(toml11_headers INTERFACE)
target_include_directories(toml11_headers SYSTEM INTERFACE ${TOML11_INCLUDE})

find_path(CLI11_INCLUDE CLI/CLI.hpp REQUIRED)
add_library(CLI11_headers INTERFACE)
target_include_directories(CLI11_headers SYSTEM INTERFACE ${CLI11_INCLUDE})

find_package(nlohmann_json 3 REQUIRED)

find_path(FLATBUFFERS_INCLUDE flatbuffers/flatbuffers.h REQUIRED)
add_library(flatbuffers_headers INTERFACE)
target_include_directories(flatbuffers_headers SYSTEM INTERFACE ${FLATBUFFERS_INCLUDE})

find_package(Threads REQUIRED)

# cpp-httplib (Debian libcpp-httplib-dev) serves the status page and /metrics.
# Debian ships it compiled (libcpp-httplib.so, with TLS, zlib and brotli): its
# header declares only, and must see the feature macros the library was built
# with (they change class layouts), so they come from its .pc file.
pkg_check_modules(HTTPLIB REQUIRED cpp-httplib)

# libpq (Debian libpq-dev) for the PostgreSQL hub store: ON where found. It
# is built as a module the region role loads (store/pg_module.h), so the
# boards' cross builds have it too (libpq-dev is in their sysroot) at no cost
# to a gateway, which never maps libpq.
pkg_check_modules(LIBPQ IMPORTED_TARGET libpq)
option(EDGESYNC_POSTGRESQL "PostgreSQL hub store (libpq)" ${LIBPQ_FOUND})
if(EDGESYNC_POSTGRESQL AND NOT LIBPQ_FOUND)
  message(FATAL_ERROR "EDGESYNC_POSTGRESQL is ON but libpq was not found (Debian: libpq-dev)")
endif()
