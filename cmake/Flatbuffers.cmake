# Generates C++ headers from the .fbs schemas of a folder with the installed
# flatc at build time: the generated code static_asserts the exact FlatBuffers
# version, so it is never committed. A cross build runs the build machine's
# flatc (same Debian version as the target's headers).
find_program(FLATC flatc REQUIRED)

function(edgesync_flatbuffers_schemas target dir)
  file(GLOB_RECURSE schemas CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.fbs)
  set(outputs)
  foreach(schema ${schemas})
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${schema})
    get_filename_component(rel_dir ${rel} DIRECTORY)
    get_filename_component(stem ${schema} NAME_WE)
    # Under the folder's own generated root (CMakeLists.txt, edgesync_library).
    set(out ${CMAKE_BINARY_DIR}/gen/${dir}/${rel_dir}/${stem}_generated.h)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${FLATC} --cpp --scoped-enums -o ${CMAKE_BINARY_DIR}/gen/${dir}/${rel_dir} ${schema}
      DEPENDS ${schema}
      COMMENT "flatc ${rel}")
    list(APPEND outputs ${out})
  endforeach()
  if(outputs)
    add_custom_target(${target}_fbs DEPENDS ${outputs})
    add_dependencies(${target} ${target}_fbs)
  endif()
endfunction()
