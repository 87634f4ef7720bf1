# Measures how long the compiler takes over each probe translation unit at -O2, in header-only and
# single-TU mode, and prints the times (the README's "Compile time and single-TU mode" numbers).
# Not a timed assertion: it fails only if a probe does not compile, whatever the machine's speed.
#   cmake -DCOMPILER=c++ -DHEADER_ONLY_FLAGS=<rsp> -DSINGLE_TU_FLAGS=<rsp> -DSOURCE_DIR=<dir>
#         -DOUTPUT_DIR=<dir> [-DHEADER_ONLY_RUNTIME_MODEL=OFF] -P measure.cmake
# HEADER_ONLY_RUNTIME_MODEL=OFF leaves out the slowest probe (over a minute of one core).
# What the README reports against the targets (header-only: umbrella <= 4 s, sequential <= 10 s,
# runtime_model <= 15 s; the last is out of reach while one TU builds every weighted layer for every dtype pair).
foreach(probe IN ITEMS umbrella sequential runtime_model)
  foreach(mode IN ITEMS header-only single-TU)
    if(mode STREQUAL "header-only")
      set(flags ${HEADER_ONLY_FLAGS})
    else()
      set(flags ${SINGLE_TU_FLAGS})
    endif()
    if(probe STREQUAL "runtime_model" AND mode STREQUAL "header-only" AND DEFINED HEADER_ONLY_RUNTIME_MODEL
       AND NOT HEADER_ONLY_RUNTIME_MODEL)
      message(STATUS "compile time at -O2: ${probe}.cpp, ${mode}: not measured "
                     "(configure with -DMIXPREC_COMPILE_TIME_HEADER_ONLY_RUNTIME_MODEL=ON)")
      continue()
    endif()
    string(TIMESTAMP start "%s%f")
    execute_process(COMMAND ${COMPILER} @${flags} -O2 -c ${SOURCE_DIR}/${probe}.cpp -o ${OUTPUT_DIR}/${probe}.o
                    RESULT_VARIABLE status ERROR_VARIABLE errors)
    string(TIMESTAMP stop "%s%f")
    if(NOT status EQUAL 0)
      message(FATAL_ERROR "${probe}.cpp (${mode}) does not compile:\n${errors}")
    endif()
    math(EXPR tenths "(${stop} - ${start}) / 100000")
    math(EXPR seconds "${tenths} / 10")
    math(EXPR fraction "${tenths} % 10")
    message(STATUS "compile time at -O2: ${probe}.cpp, ${mode}: ${seconds}.${fraction} s")
  endforeach()
endforeach()
