# Compiles compile-fail snippets, which must be rejected, and writes the compiler's messages to
# DIAGNOSTICS for compile_fail_check.cpp (../compile_checks.cmake): one source as it is, several
# as one translation unit (../unity.cmake writes it to OUTPUT).
#   cmake -DCOMPILER=c++ -DFLAGS=<rsp> -DSOURCES="a.cpp|b.cpp" -DOUTPUT=<file.cpp> -DDIAGNOSTICS=<file> -P compile.cmake
string(REPLACE "|" ";" sources "${SOURCES}")
list(LENGTH sources count)
set(compiled ${sources})
if(count GREATER 1)
  execute_process(COMMAND ${CMAKE_COMMAND} "-DSOURCES=${SOURCES}" -DOUTPUT=${OUTPUT} -P ${CMAKE_CURRENT_LIST_DIR}/../unity.cmake
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "could not write ${OUTPUT}")
  endif()
  set(compiled ${OUTPUT})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env LC_ALL=C ${COMPILER} @${FLAGS} -fsyntax-only ${compiled}
                RESULT_VARIABLE result ERROR_VARIABLE errors OUTPUT_QUIET)
file(WRITE ${DIAGNOSTICS} "${errors}")
if(errors MATCHES "internal compiler error")
  message(FATAL_ERROR "the compiler crashed on ${compiled}:\n${errors}")
endif()
if(result EQUAL 0)
  message(FATAL_ERROR "${compiled} compiled, but each of its ${count} compile-fail snippets must be rejected")
endif()
message(STATUS "${count} compile-fail snippets rejected; the compiler's messages are in ${DIAGNOSTICS}")
