# SPDX-License-Identifier: Apache-2.0
# The readme.* tests (tests/readme/README.md): README.md's program blocks
# built and run against this build installed into a prefix outside the
# tree, one test per kind whose binding this build has, plus readme.blocks,
# which fails when a program block of README.md is left unmarked.
set(readme_run bash ${PROJECT_SOURCE_DIR}/tests/readme/run.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
# The C and Go programs find cmr through pkg-config, as the README says: without it, neither runs.
set(readme_environment PYTHON=${Python3_EXECUTABLE} PKG_CONFIG=${PKG_CONFIG_EXECUTABLE} CUDA_BUILD=${CMR_WITH_CUDA_VALUE})
add_test(NAME readme.blocks COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/readme/extract.py
                                    ${PROJECT_SOURCE_DIR}/README.md --check)
set(readme_kinds)
if(PKG_CONFIG_EXECUTABLE)
  list(APPEND readme_kinds c)
  find_program(CMR_README_CXX NAMES c++ g++ clang++)
  if(CMR_README_CXX)
    list(APPEND readme_environment CXX=${CMR_README_CXX})
    list(APPEND readme_kinds cpp)
  endif()
endif()
if(CMR_USE_PYTHON)
  list(APPEND readme_kinds python dask)
endif()
if(CMR_BUILD_GO) # which needs pkg-config itself
  list(APPEND readme_environment GO=${CMR_GO_EXECUTABLE} GOCACHE=${PROJECT_BINARY_DIR}/go/cache
       NO_SWIG_FOLDER=${PROJECT_BINARY_DIR}/go/no-swig-bin)
  list(APPEND readme_kinds go)
endif()
if(CMR_BUILD_JAVA)
  list(APPEND readme_environment JAVAC=${Java_JAVAC_EXECUTABLE} JAVA=${Java_JAVA_EXECUTABLE})
  list(APPEND readme_kinds java)
endif()
if(CMR_BUILD_CSHARP)
  list(APPEND readme_environment MCS=${CMR_MCS} MONO=${CMR_MONO})
  list(APPEND readme_kinds csharp)
endif()
foreach(kind ${readme_kinds})
  add_test(NAME readme.${kind} COMMAND ${readme_run} ${kind})
  set_tests_properties(readme.${kind} PROPERTIES ENVIRONMENT "${readme_environment}" SKIP_RETURN_CODE 77 LABELS host)
  if(kind MATCHES "^(python|dask)$" AND CMR_USE_CUDA)
    set_tests_properties(readme.${kind} PROPERTIES LABELS gpu) # it runs for real on the GPU machine only
  endif()
endforeach()
set_tests_properties(readme.blocks PROPERTIES LABELS host)
