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
endfunction()
