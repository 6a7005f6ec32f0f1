# SPDX-License-Identifier: Apache-2.0
# SWIG at build time: the bindings' wrappers are made from the generated
# interfaces (generated/swig/*.i) and the hand-written .swg files of each
# binding's swig/ folder, into the build folder; nothing SWIG writes for
# them is committed (the Go module ships its own: go/CMakeLists.txt). Any
# SWIG 4.x works. SWIG_EXECUTABLE picks one (the GPU machine's swig4.0
# extracted from Debian's package), and CMR_SWIG_LIB (default: the SWIG_LIB
# environment variable at configure time) its library, for a SWIG whose
# compiled-in library folder is not there.

set(CMR_SWIG_LIB "$ENV{SWIG_LIB}" CACHE PATH "SWIG's library folder (SWIG_LIB), when not SWIG's compiled-in one")
if(CMR_SWIG_LIB)
  set(ENV{SWIG_LIB} "${CMR_SWIG_LIB}") # for FindSWIG's `swig -swiglib`
endif()
find_package(SWIG 4.0 QUIET)

# cmr_require_swig(WHAT): stops configuring, saying what needs SWIG.
function(cmr_require_swig what)
  if(NOT SWIG_FOUND)
    message(FATAL_ERROR "cmr: ${what} needs SWIG 4.0 or later (Debian: swig), not found "
                        "(-DSWIG_EXECUTABLE=/path/to/swig, and -DCMR_SWIG_LIB=<its library> if it is not installed)")
  endif()
endfunction()

# The command line that runs SWIG, with its library when one was given.
if(CMR_SWIG_LIB)
  set(CMR_SWIG_COMMAND ${CMAKE_COMMAND} -E env SWIG_LIB=${CMR_SWIG_LIB} ${SWIG_EXECUTABLE})
else()
  set(CMR_SWIG_COMMAND ${SWIG_EXECUTABLE})
endif()

# cmr_swig(INTERFACE name.i SWG_DIR dir WRAPPER file.c OUTDIR dir FLAGS flags... [OUTPUTS files...])
# Runs SWIG over generated/swig/<INTERFACE> at build time: the C wrapper
# into WRAPPER, the language's own files into OUTDIR (emptied first, so
# that nothing stale stays there); OUTPUTS names those of them that others
# depend on. Reruns when the interface, a .swg file or a public header changes.
function(cmr_swig)
  cmake_parse_arguments(S "" "INTERFACE;SWG_DIR;WRAPPER;OUTDIR" "FLAGS;OUTPUTS" ${ARGN})
  file(GLOB swg_files CONFIGURE_DEPENDS ${S_SWG_DIR}/*.swg)
  file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/runtime/include/cmr/*.h
       ${PROJECT_SOURCE_DIR}/generated/include/cmr/*.h)
  set(interface ${PROJECT_SOURCE_DIR}/generated/swig/${S_INTERFACE})
  add_custom_command(OUTPUT ${S_WRAPPER} ${S_OUTPUTS}
                     COMMAND ${CMAKE_COMMAND} -E rm -rf ${S_OUTDIR}
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${S_OUTDIR}
                     COMMAND ${CMR_SWIG_COMMAND} ${S_FLAGS} -I${S_SWG_DIR} -I${PROJECT_SOURCE_DIR}/generated/include
                             -I${PROJECT_SOURCE_DIR}/runtime/include -o ${S_WRAPPER} -outdir ${S_OUTDIR} ${interface}
                     DEPENDS ${interface} ${swg_files} ${headers}
                     COMMENT "SWIG ${S_INTERFACE}" VERBATIM)
endfunction()
