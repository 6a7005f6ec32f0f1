# SPDX-License-Identifier: Apache-2.0
# The boundary.resources test: the algorithm files and the generated code
# (the object library cmr_resource_objects) see only runtime/src/resource_api/
# and generated/src. With that library's include path and definitions, a
# resource file compiles as it is, and the same file including any other
# header of runtime/src does not.
#
#   cmake -DCC=... -DSOURCE_DIR=... -DINCLUDES=a|b|... -DDEFINES=x|y|... -DWORK_DIR=... -P check.cmake
foreach(var CC SOURCE_DIR INCLUDES DEFINES WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check.cmake: -D${var}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" includes "${INCLUDES}")
string(REPLACE "|" ";" defines "${DEFINES}")
list(TRANSFORM includes PREPEND -I)
list(TRANSFORM defines PREPEND -D)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# compile(SOURCE file RESULT var OUTPUT var): cc -fsyntax-only as the library compiles.
function(compile source result output)
  execute_process(COMMAND ${CC} -std=c17 -fsyntax-only ${includes} ${defines} ${source}
                  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${result} ${code} PARENT_SCOPE)
  set(${output} "${out}" PARENT_SCOPE)
endfunction()

# The control: resource files as they are compile (else a failure below proves nothing).
set(controls ${SOURCE_DIR}/runtime/resources/system.c ${SOURCE_DIR}/runtime/resources/pool.c
             ${SOURCE_DIR}/generated/src/resources/pool.c ${SOURCE_DIR}/generated/src/stack_table.c)
foreach(control ${controls})
  compile(${control} code out)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${control} does not compile with the resource files' include path:\n${out}")
  endif()
endforeach()

# Each private header, included by a resource file, is not found.
file(GLOB private_headers RELATIVE ${SOURCE_DIR}/runtime/src ${SOURCE_DIR}/runtime/src/*/*.h)
list(FILTER private_headers EXCLUDE REGEX "^resource_api/")
if(NOT private_headers)
  message(FATAL_ERROR "no private header in ${SOURCE_DIR}/runtime/src: nothing to check")
endif()
file(READ ${SOURCE_DIR}/runtime/resources/system.c system)
foreach(header ${private_headers})
  string(MAKE_C_IDENTIFIER ${header} stem)
  set(probe ${WORK_DIR}/system_with_${stem}.c)
  get_filename_component(header_name ${header} NAME)
  file(WRITE ${probe} "#include \"${header_name}\"\n${system}")
  compile(${probe} code out)
  if(code EQUAL 0)
    message(FATAL_ERROR "a resource file including runtime/src/${header} compiled: the boundary is open")
  endif()
  if(NOT out MATCHES "${header_name}")
    message(FATAL_ERROR "a resource file including runtime/src/${header} failed, but not for that header:\n${out}")
  endif()
  message(STATUS "refused: a resource file including runtime/src/${header}")
endforeach()
