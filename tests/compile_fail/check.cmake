# Runs one compile-fail check (see ../compile_checks.cmake). The control versions of all the
# snippets compile together in another test (compile_fail.controls).
# Every "// expect: <text>" line of the snippet must appear in the compiler's output, and the first
# one in its first error: what a user reads first (and all that -Wfatal-errors shows) is ours.
file(STRINGS ${SOURCE} expect_lines REGEX "^// expect: ")
if(NOT expect_lines)
  message(FATAL_ERROR "${SOURCE} needs at least one '// expect: <message>' line")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -E env LC_ALL=C ${COMPILER} @${FLAGS} -fsyntax-only ${SOURCE}
  RESULT_VARIABLE result ERROR_VARIABLE output OUTPUT_QUIET)
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must be rejected with: ${expect_lines}")
endif()
string(REGEX MATCH "[^\n]*error: [^\n]*" first_error "${output}")
list(GET expect_lines 0 first_expected)
string(REPLACE "// expect: " "" first_expected "${first_expected}")
string(FIND "${first_error}" "${first_expected}" position)
if(position EQUAL -1)
  message(FATAL_ERROR "${SOURCE} failed to compile, but its first error is not '${first_expected}':\n${output}")
endif()
foreach(line IN LISTS expect_lines)
  string(REPLACE "// expect: " "" expected "${line}")
  string(FIND "${output}" "${expected}" position)
  if(position EQUAL -1)
    message(FATAL_ERROR "${SOURCE} failed to compile, but without the message '${expected}':\n${output}")
  endif()
  message(STATUS "rejected as expected: ${expected}")
endforeach()
