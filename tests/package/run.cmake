# Packaging test: builds tests/package/consumer against mixprec, either from an installed
# tree (find_package) or through add_subdirectory, with an explicit -march, then runs it.
file(REMOVE_RECURSE ${WORK_DIR})
# Unoptimized: this checks that the package builds, links and runs, not how fast; -O3 made the
# two packaging tests cost 214 s of CPU instead of 149 s.
# MARCH: the consumer's own -march (a user's flags must never break the library).
set(consumer_args -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE= "-DCMAKE_CXX_FLAGS=-march=${MARCH}")
if(MODE STREQUAL "install")
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
    RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "cmake --install failed")
  endif()
  list(APPEND consumer_args -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DMIXPREC_EXPECTED_PREFIX=${WORK_DIR}/prefix)
  set(steps configure build run run_separate)
else()
  # Header-only here: the single-TU consumer (the kernels and runtime layers compiled again,
  # 25 s) is built against the installed tree, whose installed sources are the path at risk.
  list(APPEND consumer_args -DMIXPREC_SOURCE_DIR=${SOURCE_DIR} -DCONSUMER_SINGLE_TU=OFF)
  set(steps configure build run)
endif()

foreach(step IN LISTS steps)
  if(step STREQUAL "configure")
    set(command ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/consumer -B ${WORK_DIR}/build -G ${GENERATOR}
                ${consumer_args})
  elseif(step STREQUAL "build")
    set(command ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
  elseif(step STREQUAL "run")
    set(command ${WORK_DIR}/build/consumer)
  else()
    set(command ${WORK_DIR}/build/consumer_separate)
  endif()
  execute_process(COMMAND ${command} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  message("${output}")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "package test (${MODE}): ${step} failed")
  endif()
endforeach()
