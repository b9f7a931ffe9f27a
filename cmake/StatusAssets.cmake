# The status page's files embedded in the binary (gateways are offline: the
# page must fetch nothing from outside). The chart library is Debian's
# libjs-dygraphs (firmware-config/deps.sh, group build), read from where the
# package installs it at build time, never committed. A cross build embeds
# the build machine's copy (the files are architecture-independent).
find_file(DYGRAPHS_JS dygraph.min.js PATHS /usr/share/javascript/dygraphs NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
find_file(DYGRAPHS_CSS dygraph.min.css PATHS /usr/share/javascript/dygraphs NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
if(NOT DYGRAPHS_JS OR NOT DYGRAPHS_CSS)
  message(FATAL_ERROR "dygraphs not found: install libjs-dygraphs (firmware-config/deps.sh build)")
endif()

function(edgesync_status_assets target)
  set(page ${CMAKE_SOURCE_DIR}/agent/status_page.html)
  set(out ${CMAKE_BINARY_DIR}/gen/agent/agent/status_assets.h)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DPAGE=${page} -DJS=${DYGRAPHS_JS} -DCSS=${DYGRAPHS_CSS}
            -P ${CMAKE_SOURCE_DIR}/cmake/Embed.cmake
    DEPENDS ${page} ${DYGRAPHS_JS} ${DYGRAPHS_CSS} ${CMAKE_SOURCE_DIR}/cmake/Embed.cmake
    COMMENT "embedding the status page and dygraphs")
  add_custom_target(${target}_assets DEPENDS ${out})
  add_dependencies(${target} ${target}_assets)
endfunction()
