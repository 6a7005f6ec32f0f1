# SPDX-License-Identifier: Apache-2.0
# The install.consumer test: does an installed cmr work for a program outside
# the tree, both ways a C program finds it?
#
#   cmake -DSOURCE_DIR=<cmr source> -DBUILD_DIR=<built cmr> -DWORK_DIR=<scratch> [-DPYTHON=<interpreter>] -P run.cmake
#
# 1. cmake --install BUILD_DIR into WORK_DIR/prefix;
# 2. configure and build tests/consumer (find_package(cmr CONFIG)) against that
#    prefix: consumer_shared (cmr::cmr) and consumer_static (cmr::cmr_static);
# 3. compile consumer.c with the flags of `pkg-config cmr` and of
#    `pkg-config --static cmr` (the latter linking libcmr.a);
# running every executable;
# 4. when the build has the Python package (PYTHON given): import the installed cmr from
#    outside the tree and allocate through it (it must load the libcmr
#    installed beside it).
# Any failing step fails the test.
cmake_minimum_required(VERSION 3.25)

foreach(var SOURCE_DIR BUILD_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake: pass -D${var}=...")
  endif()
endforeach()

# run(<what> <command>...): runs the command, echoing it and its output, and
# fails the test when it exits non-zero. Its output is left in run_output.
function(run what)
  execute_process(COMMAND ${ARGN} COMMAND_ECHO STDOUT RESULT_VARIABLE status
                  OUTPUT_VARIABLE output ERROR_VARIABLE output
                  ECHO_OUTPUT_VARIABLE ECHO_ERROR_VARIABLE)
  if(NOT status STREQUAL "0")
    message(FATAL_ERROR "install.consumer: ${what} failed (${status})")
  endif()
  set(run_output "${output}" PARENT_SCOPE)
endfunction()

# The value of `name` in the cache of the cmr build.
function(build_cache_value name out)
  file(STRINGS "${BUILD_DIR}/CMakeCache.txt" line REGEX "^${name}:[A-Z]+=")
  string(REGEX REPLACE "^${name}:[A-Z]+=" "" value "${line}")
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# pkg_config(<out> <args>...): the output of pkg-config, as a list of arguments.
function(pkg_config out)
  execute_process(COMMAND ${PKG_CONFIG} ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE output
                  ERROR_VARIABLE output OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT status STREQUAL "0")
    message(FATAL_ERROR "install.consumer: pkg-config ${ARGN} failed:\n${output}")
  endif()
  separate_arguments(output UNIX_COMMAND "${output}")
  set(${out} "${output}" PARENT_SCOPE)
endfunction()

# run_consumer(<executable>): runs it; it must print the installed version.
function(run_consumer executable)
  run("running ${executable}" "${executable}")
  if(NOT run_output MATCHES "cmr ${version} ")
    message(FATAL_ERROR "install.consumer: ${executable} did not report cmr ${version}")
  endif()
endfunction()

# expect_static(<executable>): it must not need libcmr.so at run time.
function(expect_static executable)
  execute_process(COMMAND ${READELF} -d "${executable}" OUTPUT_VARIABLE dynamic RESULT_VARIABLE status)
  if(NOT status STREQUAL "0" OR dynamic MATCHES "libcmr\\.so")
    message(FATAL_ERROR "install.consumer: ${executable} should link libcmr.a, yet needs libcmr.so")
  endif()
endfunction()

if(NOT EXISTS "${BUILD_DIR}/CMakeCache.txt")
  message(FATAL_ERROR "install.consumer: ${BUILD_DIR} is not a CMake build of cmr")
endif()
build_cache_value(CMAKE_GENERATOR generator)
build_cache_value(CMAKE_MAKE_PROGRAM make_program)
build_cache_value(CMAKE_C_COMPILER cc)
find_program(PKG_CONFIG pkg-config REQUIRED)
find_program(READELF readelf REQUIRED)

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# ---- 1. install ---------------------------------------------------------------------
run("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
file(GLOB_RECURSE pc_file "${prefix}/*/pkgconfig/cmr.pc")
if(NOT pc_file)
  message(FATAL_ERROR "install.consumer: no pkgconfig/cmr.pc under ${prefix}")
endif()
get_filename_component(pc_dir "${pc_file}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
pkg_config(version --modversion cmr)

# ---- 2. CMake: find_package(cmr CONFIG) -----------------------------------------------
set(cmake_build "${WORK_DIR}/cmake-consumer")
run("configuring the CMake consumer"
    ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer" -B "${cmake_build}" -G "${generator}"
    "-DCMAKE_MAKE_PROGRAM=${make_program}" "-DCMAKE_C_COMPILER=${cc}"
    "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(NOT run_output MATCHES "cmr ${version} from ${prefix}/")
  message(FATAL_ERROR "install.consumer: find_package(cmr) did not find cmr ${version} in ${prefix}")
endif()
run("building the CMake consumer" ${CMAKE_COMMAND} --build "${cmake_build}")
expect_static("${cmake_build}/consumer_static")
# The build tree's RPATH points at the installed libcmr.so.
run_consumer("${cmake_build}/consumer_shared")
run_consumer("${cmake_build}/consumer_static")

# ---- 3. pkg-config ------------------------------------------------------------------------
pkg_config(cflags --cflags cmr)
pkg_config(libs --libs cmr)
pkg_config(libdir --variable=libdir cmr)
pkg_config(static_libs --static --libs cmr)
# Both libcmr.so and libcmr.a sit in libdir; make the linker take the archive.
list(TRANSFORM static_libs REPLACE "^-lcmr$" "-Wl,-Bstatic;-lcmr;-Wl,-Bdynamic")
set(compile "${cc}" -std=c11 -Wall -Wextra -Wpedantic -Werror "${SOURCE_DIR}/tests/consumer/consumer.c"
            ${cflags})

run("compiling with pkg-config cmr"
    ${compile} ${libs} "-Wl,-rpath,${libdir}" -o "${WORK_DIR}/pkgconfig_shared")
run("compiling with pkg-config --static cmr"
    ${compile} ${static_libs} -o "${WORK_DIR}/pkgconfig_static")
expect_static("${WORK_DIR}/pkgconfig_static")
run_consumer("${WORK_DIR}/pkgconfig_shared")
run_consumer("${WORK_DIR}/pkgconfig_static")

# ---- 4. Python ------------------------------------------------------------------------------
# PYTHON (the interpreter the package was built for) is given when the
# build has the package; CMR_PYTHON_INSTALL_DIR is where it was installed.
set(with_python_text "")
if(DEFINED PYTHON)
  build_cache_value(CMR_PYTHON_INSTALL_DIR site_packages)
  set(ENV{PYTHONPATH} "${prefix}/${site_packages}")
  run("importing the installed Python package" "${PYTHON}" "${SOURCE_DIR}/tests/consumer/consumer.py" "${prefix}")
  if(NOT run_output MATCHES "cmr ${version} python 1048576")
    message(FATAL_ERROR "install.consumer: the installed Python package did not report cmr ${version}")
  endif()
  set(with_python_text ", and from Python")
endif()

message(STATUS "install.consumer: cmr ${version} installed and consumed through CMake and pkg-config, "
               "shared and static${with_python_text}")
