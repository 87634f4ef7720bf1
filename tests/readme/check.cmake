# Compiles every ```cpp block of README.md (see extract_snippets.cpp): errors point at README.md's
# own lines. With the consumer's warnings as errors (a deprecated name fails), less the unused-value
# ones: a snippet computes values only to show them (`q.loss_scale();`).
#   cmake -DEXTRACTOR=<exe> -DREADME=<README.md> -DOUTPUT=<file.cpp> -DCOMPILER=<c++> -DFLAGS=<rsp> -P check.cmake
execute_process(COMMAND ${EXTRACTOR} ${README} ${OUTPUT} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "could not extract the snippets of ${README}")
endif()
execute_process(COMMAND ${COMPILER} @${FLAGS} -Wno-unused -Wno-unused-result -fsyntax-only ${OUTPUT} RESULT_VARIABLE status ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "a README.md snippet does not compile (declare the names it uses in a "
                      "'<!-- snippet context: ... -->' comment right before its fence):\n${errors}")
endif()
