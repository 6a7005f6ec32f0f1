# SPDX-License-Identifier: Apache-2.0
# Adds to a packed .nupkg the metadata Debian's nuget 2.8 cannot pack (its
# schema predates them), which NuGet 4.9+ and the nuget.org gallery read:
# the license as an SPDX expression and the source repository. The package
# is unpacked, its <id>.nuspec given the elements before </metadata>, and
# zipped again with the same entries.
#
#   cmake -DNUPKG=<file.nupkg> -DLICENSE_EXPRESSION=Apache-2.0 -DREPOSITORY=<git url>
#         -P NuspecMetadata.cmake
foreach(variable NUPKG LICENSE_EXPRESSION REPOSITORY)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "NuspecMetadata.cmake: -D${variable}= is required")
  endif()
endforeach()
get_filename_component(stage "${NUPKG}.stage" ABSOLUTE)
file(REMOVE_RECURSE "${stage}")
file(MAKE_DIRECTORY "${stage}")
execute_process(COMMAND ${CMAKE_COMMAND} -E tar xf "${NUPKG}" WORKING_DIRECTORY "${stage}" RESULT_VARIABLE unpacked)
if(NOT unpacked EQUAL 0)
  message(FATAL_ERROR "NuspecMetadata.cmake: cannot unpack ${NUPKG}")
endif()
file(GLOB nuspec "${stage}/*.nuspec")
list(LENGTH nuspec count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "NuspecMetadata.cmake: ${NUPKG} has ${count} nuspec files, not one")
endif()
file(READ "${nuspec}" text)
string(FIND "${text}" "</metadata>" end)
if(end EQUAL -1)
  message(FATAL_ERROR "NuspecMetadata.cmake: ${nuspec} has no </metadata>")
endif()
string(REPLACE "</metadata>"
               "  <license type=\"expression\">${LICENSE_EXPRESSION}</license>\n    <repository type=\"git\" url=\"${REPOSITORY}\" />\n  </metadata>"
               text "${text}")
file(WRITE "${nuspec}" "${text}")
file(GLOB_RECURSE entries RELATIVE "${stage}" "${stage}/*")
file(REMOVE "${NUPKG}")
execute_process(COMMAND ${CMAKE_COMMAND} -E tar cf "${NUPKG}" --format=zip -- ${entries}
                WORKING_DIRECTORY "${stage}" RESULT_VARIABLE packed)
if(NOT packed EQUAL 0)
  message(FATAL_ERROR "NuspecMetadata.cmake: cannot zip ${NUPKG} again")
endif()
file(REMOVE_RECURSE "${stage}")
