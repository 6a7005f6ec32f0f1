# SPDX-License-Identifier: Apache-2.0
# Runs cmr-replay and checks its exit status and output.
#   cmake -DTOOL=... -DARGS="a;b;c" -DRC=0 -DEXPECT="text1;text2" -P run.cmake
# Each EXPECT entry must occur in stdout or stderr, as a plain substring.
execute_process(COMMAND ${TOOL} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT rc STREQUAL RC)
  message(FATAL_ERROR "cmr-replay ${ARGS} exited with ${rc}, expected ${RC}:\n${all}")
endif()
foreach(text IN LISTS EXPECT)
  string(FIND "${all}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "cmr-replay ${ARGS}: output lacks \"${text}\":\n${all}")
  endif()
endforeach()
message(STATUS "${all}")
