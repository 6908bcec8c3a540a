# SPDX-License-Identifier: BSD-2-Clause
# urxe_layer(NAME SOURCES... [DEPS lower layers...])
# One static, position-independent library per layer.  Include directories
# are PRIVATE: a layer sees its own headers and the contracts in
# include/urxe, never another layer's internals.
function(urxe_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${L_SOURCES})
  target_include_directories(${name}
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
    PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${name} PUBLIC ${L_DEPS})
  # Fat objects: the library's link optimizes across the layers; tests and
  # tools link the same archives without LTO, from the ordinary code.
  if(URXE_LTO_OK)
    target_compile_options(${name} PRIVATE -flto=auto -ffat-lto-objects)
  endif()
endfunction()
