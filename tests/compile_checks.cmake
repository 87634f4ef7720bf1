# Tests that run the compiler or CMake itself:
#  - every public header compiles on its own (one test per header, as Boost.Hana does);
#  - compile-fail snippets fail with the message the user is meant to read (as fmt and Eigen do);
#  - explicit -march: what an AVX-512 (or an old) CPU's compiler would see, compiled on any machine;
#  - packaging: a consumer project builds against an installed tree and through add_subdirectory;
#  - the README's C++ blocks compile.
# Those that take over about 5 s have a COST, so that a fresh CTest run (no timings of its own
# yet) starts them before the header checks, which then fill in the end: the last test of a run
# used to be a 27 s compile beside an idle core.

# The flags a consumer of mixprec::mixprec compiles with, read off a probe target.
add_library(mixprec_flags_probe OBJECT EXCLUDE_FROM_ALL test_main.cpp)
target_link_libraries(mixprec_flags_probe PRIVATE mixprec::mixprec)
set(mixprec_include_dir ${PROJECT_SOURCE_DIR}/include)
# Our headers get -I (so that their warnings show); the compiler's own directories are left out.
list(JOIN CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES "|" implicit_dirs)
string(REPLACE "+" "\\+" implicit_dirs "${implicit_dirs}")
set(probe_includes "$<FILTER:$<TARGET_PROPERTY:mixprec_flags_probe,INCLUDE_DIRECTORIES>,EXCLUDE,^(${mixprec_include_dir}|${implicit_dirs})$>")
set(probe_definitions "$<TARGET_PROPERTY:mixprec_flags_probe,COMPILE_DEFINITIONS>")
set(probe_options "$<TARGET_PROPERTY:mixprec_flags_probe,COMPILE_OPTIONS>")
set(plain_consumer_flags "-std=c++20 -Wall -Wextra -Wpedantic -Werror -I${mixprec_include_dir}
$<$<BOOL:${probe_includes}>:-isystem $<JOIN:${probe_includes},\n-isystem >>
$<$<BOOL:${probe_definitions}>:-D$<JOIN:${probe_definitions},\n-D>>
$<JOIN:${probe_options},\n>
")
# Header-only mode: what a user compiling with plain -I gets.
set(header_only_consumer_flags ${CMAKE_CURRENT_BINARY_DIR}/consumer_flags_header_only.rsp)
file(GENERATE OUTPUT ${header_only_consumer_flags} CONTENT "${plain_consumer_flags}")
# Single-TU mode keeps the header and compile-fail checks fast: they see the kernels'
# declarations, and kernels/implementation.hpp (checked on its own like every header) holds the rest.
set(consumer_flags ${CMAKE_CURRENT_BINARY_DIR}/consumer_flags.rsp)
file(GENERATE OUTPUT ${consumer_flags} CONTENT "-DMIXPREC_SEPARATE_KERNELS\n${plain_consumer_flags}")
# The checks below: a consumer's flags (a nested response file) and the project's GCC memory
# options (CMakeLists.txt: 20% of a header check's time); compile_time measures a consumer's alone.
set(check_memory_flags "")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(JOIN mixprec_gcc_memory_options "\n" check_memory_flags)
endif()
set(header_only_check_flags ${CMAKE_CURRENT_BINARY_DIR}/check_flags_header_only.rsp)
file(GENERATE OUTPUT ${header_only_check_flags} CONTENT "@${header_only_consumer_flags}\n${check_memory_flags}\n")
set(check_flags ${CMAKE_CURRENT_BINARY_DIR}/check_flags.rsp)
file(GENERATE OUTPUT ${check_flags} CONTENT "@${consumer_flags}\n${check_memory_flags}\n")

# One test per public header: those outside detail/, and the one detail header users compile
# themselves (make_runtime_layer.hpp, single-TU mode). The detail headers are reached only through
# those, so every order they are included in is compiled here; checking each alone too cost 41
# more compiles (63 s of CPU) for no include order a program can have.
file(GLOB_RECURSE public_headers CONFIGURE_DEPENDS RELATIVE ${mixprec_include_dir}
  ${mixprec_include_dir}/mixprec/*.hpp)
list(FILTER public_headers EXCLUDE REGEX "/detail/")
list(APPEND public_headers mixprec/models/detail/make_runtime_layer.hpp)
foreach(header IN LISTS public_headers)
  string(REGEX REPLACE "[/.]" "_" check_name "${header}")
  set(source ${CMAKE_CURRENT_BINARY_DIR}/header_checks/${check_name}.cpp)
  file(CONFIGURE OUTPUT ${source} CONTENT "#include <${header}>\n#include <${header}>\n")
  add_test(NAME header.${header} COMMAND ${CMAKE_CXX_COMPILER} @${check_flags} -fsyntax-only ${source})
  set_tests_properties(header.${header} PROPERTIES LABELS "headers")
endforeach()

# compile_fail/<name>.cpp: must fail to compile, printing the text of its "// expect: " lines
# (compile_fail_check.cpp says how an error is matched to its snippet); with
# -DMIXPREC_COMPILE_FAIL_CONTROL all of them compile, together, so that each failure is the
# intended one. GCC rejects them together too, in one translation unit (compile_fail/compile.cmake):
# one at a time they cost 25 compiles, 121 s of CPU on a Zen 3, together 12 s. There each
# snippet also sees the others' includes, and a failing instantiation is reported once, where it
# first fails: a snippet that says "// compiled alone: <why>" is compiled on its own, as every
# snippet is under another compiler (clang prints an error's context after it, which the
# checker does not read, and stops after 20 errors).
file(GLOB compile_fail_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/*.cpp)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${compile_fail_sources})  # the markers
add_executable(mixprec_compile_fail_check compile_fail_check.cpp)
target_link_libraries(mixprec_compile_fail_check PRIVATE mixprec_warnings)
# A compile of snippets that must be rejected (its log in <name>.log): the fixture their checks require.
function(add_compile_fail_compile name sources cost)
  list(JOIN sources "|" source_list)
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} -DCOMPILER=${CMAKE_CXX_COMPILER} -DFLAGS=${check_flags} "-DSOURCES=${source_list}"
            -DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/${name}.cpp -DDIAGNOSTICS=${CMAKE_CURRENT_BINARY_DIR}/${name}.log
            -P ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/compile.cmake)
  set_tests_properties(${name} PROPERTIES LABELS "compile_fail" FIXTURES_SETUP ${name} COST ${cost})
endfunction()
set(compile_fail_together "")
foreach(source IN LISTS compile_fail_sources)
  get_filename_component(check_name ${source} NAME_WE)
  file(STRINGS ${source} compiled_alone REGEX "^// compiled alone: ")
  set(compile compile_fail.compile.together)
  set(alone "")
  if(compiled_alone OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(compile compile_fail.compile.${check_name})
    set(alone alone)
    add_compile_fail_compile(${compile} ${source} 10)
  else()
    list(APPEND compile_fail_together ${source})
  endif()
  add_test(NAME compile_fail.${check_name}
    COMMAND mixprec_compile_fail_check ${CMAKE_CURRENT_BINARY_DIR}/${compile}.log ${source} ${alone})
  set_tests_properties(compile_fail.${check_name} PROPERTIES LABELS "compile_fail" FIXTURES_REQUIRED ${compile})
endforeach()
if(compile_fail_together)
  add_compile_fail_compile(compile_fail.compile.together "${compile_fail_together}" 40)
endif()
# The checker itself, on a hand-written log (compile_fail_check/): what it accepts (its exit
# status) and each refusal (its message).
foreach(case_and_message IN ITEMS "first|" "second|"
                                  "third|third.cpp was not rejected: no error of together.log comes from its lines"
                                  "wrong_first|wrong_first.cpp failed to compile, but its first error is not 'is not a member of'"
                                  "missing_message|without the message 'lib: long is too long'"
                                  "no_expect|no_expect.cpp needs at least one '// expect: <message>' line")
  string(REPLACE "|" ";" case_and_message "${case_and_message}")
  list(GET case_and_message 0 check_case)
  list(GET case_and_message 1 message)
  add_test(NAME compile_fail_check.${check_case} COMMAND mixprec_compile_fail_check together.log ${check_case}.cpp
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail_check)
  set_tests_properties(compile_fail_check.${check_case} PROPERTIES LABELS "compile_fail")
  if(message)
    set_tests_properties(compile_fail_check.${check_case} PROPERTIES PASS_REGULAR_EXPRESSION "${message}")
  endif()
endforeach()
add_test(NAME compile_fail_check.unreadable_log COMMAND mixprec_compile_fail_check missing.log first.cpp
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail_check)
add_test(NAME compile_fail_check.bad_argument COMMAND mixprec_compile_fail_check together.log first.cpp together
         WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail_check)
set_tests_properties(compile_fail_check.unreadable_log PROPERTIES LABELS "compile_fail"
                     PASS_REGULAR_EXPRESSION "compile_fail_check: cannot read missing.log")
set_tests_properties(compile_fail_check.bad_argument PROPERTIES LABELS "compile_fail"
                     PASS_REGULAR_EXPRESSION "usage: compile_fail_check <diagnostics.log> <snippet.cpp> .alone.")
list(JOIN compile_fail_sources "|" compile_fail_list)
add_test(NAME compile_fail.controls
  COMMAND ${CMAKE_COMMAND} -DCOMPILER=${CMAKE_CXX_COMPILER} -DFLAGS=${check_flags} "-DSOURCES=${compile_fail_list}"
          -DDEFINES=MIXPREC_COMPILE_FAIL_CONTROL -DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/compile_fail_controls.cpp
          -P ${CMAKE_CURRENT_SOURCE_DIR}/unity.cmake)
set_tests_properties(compile_fail.controls PROPERTIES LABELS "compile_fail" COST 40)

# The README's C++ blocks compile, all of them in one translation unit (tests/readme/).
add_executable(mixprec_extract_snippets readme/extract_snippets.cpp)
target_link_libraries(mixprec_extract_snippets PRIVATE mixprec_warnings)
add_test(NAME readme_snippets
  COMMAND ${CMAKE_COMMAND} -DEXTRACTOR=$<TARGET_FILE:mixprec_extract_snippets> -DREADME=${PROJECT_SOURCE_DIR}/README.md
          -DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/readme_snippets.cpp -DCOMPILER=${CMAKE_CXX_COMPILER} -DFLAGS=${check_flags}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/readme/check.cmake)
set_tests_properties(readme_snippets PROPERTIES LABELS "readme" COST 20)
# The extractor's errors: each file of readme/bad/ is refused, with the reason.
foreach(case_and_message IN ITEMS "unclosed_context|the context comment at line 2 is not closed"
                                  "cxx_fence|line 2 opens a C.. block as ```c..; write ```cpp"
                                  "unclosed_block|the block at line 2 is not closed"
                                  "no_block|no ```cpp block found")
  string(REPLACE "|" ";" case_and_message "${case_and_message}")
  list(GET case_and_message 0 bad_case)
  list(GET case_and_message 1 message)
  add_test(NAME readme_snippets.rejects.${bad_case}
           COMMAND mixprec_extract_snippets ${CMAKE_CURRENT_SOURCE_DIR}/readme/bad/${bad_case}.md
                   ${CMAKE_CURRENT_BINARY_DIR}/readme_bad_${bad_case}.cpp)
  set_tests_properties(readme_snippets.rejects.${bad_case} PROPERTIES LABELS "readme" PASS_REGULAR_EXPRESSION "${message}")
endforeach()

# Every benchmark compiles (-fsyntax-only: parsed and its templates instantiated, not optimized),
# all of them in one translation unit (unity.cmake): the test build leaves the benchmark
# programs to scripts/run bench, since building them at -O3 took 185 s of one core, a sixth of
# that build; checked one by one, they took 63 s.
file(GLOB benchmark_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/benchmarks/*.cpp)
list(JOIN benchmark_sources "|" benchmark_list)
add_test(NAME benchmark_compiles
  COMMAND ${CMAKE_COMMAND} -DCOMPILER=${CMAKE_CXX_COMPILER} -DFLAGS=${check_flags} "-DSOURCES=${benchmark_list}"
          "-DEXTRA_FLAGS=-Wshadow|-Wconversion|-Wno-sign-conversion|-I${PROJECT_SOURCE_DIR}/tests|-I${PROJECT_SOURCE_DIR}/examples"
          -DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/benchmark_compiles.cpp -P ${CMAKE_CURRENT_SOURCE_DIR}/unity.cmake)
set_tests_properties(benchmark_compiles PROPERTIES LABELS "benchmarks" COST 60)

# Explicit -march, compiled (not run) with optimization so that the optimizer's warnings show:
# every translation unit the project builds with -march=native, the single-TU kernel source, and
# a plain -I consumer in header-only mode. An AVX2 machine thus catches what
# only an AVX-512 machine's -march=native would otherwise hit (Highway's AVX3_DL baseline, GCC 12's
# AVX-512 intrinsics warnings inside Eigen) and the other way round (-march=x86-64-v2, for the
# -march=native sources and the consumer).
set(march_check_sources
  "native_eigen_gemm|${PROJECT_SOURCE_DIR}/benchmarks/bench_gemm_eigen_native.cpp|${header_only_check_flags}"
  "native_convert|${CMAKE_CURRENT_SOURCE_DIR}/multi_march/convert_native.cpp|${header_only_check_flags}"
  "consumer_header_only|${CMAKE_CURRENT_SOURCE_DIR}/package/consumer/main.cpp|${header_only_check_flags}"
  "kernels|${PROJECT_SOURCE_DIR}/cmake/mixprec_kernels.cpp|${check_flags}")
foreach(march IN ITEMS sapphirerapids x86-64-v4 x86-64-v2)
  foreach(entry IN LISTS march_check_sources)
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 check_name)
    list(GET entry 1 source)
    list(GET entry 2 flags)
    # The project's own build compiles the kernels for the default x86-64, older than x86-64-v2:
    # only the -march=native sources need the check the other way round. Under x86-64-v4 the
    # kernels' baseline target is AVX3; no line of mixprec's kernels differs between AVX3 and the
    # AVX3_DL that sapphirerapids compiles (the ordinary build compiles AVX3 as a dispatched
    # target, and consumer_header_only compiles under x86-64-v4): checking it too cost 72 s of
    # one core on a Zen 3. The runtime layers (the largest TU, 109 s at -O3 on a Zen 3; no
    # intrinsics of their own, and Eigen's double GEMM, which native_eigen_gemm checks under
    # AVX-512) are not checked here (CI time).
    if(check_name STREQUAL "kernels" AND NOT march STREQUAL "sapphirerapids")
      continue()
    endif()
    add_test(NAME march.${march}.${check_name}
      COMMAND ${CMAKE_CXX_COMPILER} @${flags} -O2 -Wshadow -Wconversion -Wno-sign-conversion -march=${march}
              -c ${source} -o ${CMAKE_CURRENT_BINARY_DIR}/march_${march}_${check_name}.o)
    set_tests_properties(march.${march}.${check_name} PROPERTIES LABELS "march" COST 40)
  endforeach()
endforeach()

# The consumers run here, so their -march is one every x86-64 machine of ours runs: the machine's
# own (AVX-512 on some) and the oldest we support.
foreach(mode_and_march IN ITEMS install:native subdirectory:x86-64-v2)
  string(REPLACE ":" ";" mode_and_march "${mode_and_march}")
  list(GET mode_and_march 0 mode)
  list(GET mode_and_march 1 march)
  add_test(NAME package.${mode}
    COMMAND ${CMAKE_COMMAND} -DMODE=${mode} -DMARCH=${march} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBUILD_DIR=${PROJECT_BINARY_DIR}
            -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/package_${mode} -DGENERATOR=${CMAKE_GENERATOR}
            -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/package/run.cmake)
  set_tests_properties(package.${mode} PROPERTIES LABELS "package" TIMEOUT 600 COST 500)
endforeach()

# Compile time: prints how long the three probe TUs in compile_time/ take at -O2, header-only and
# single-TU (not a timed assertion); only the release build measures (the sanitize preset has no
# compile checks and the debug preset excludes the label). The header-only RuntimeModel probe
# alone takes over a minute of one core, so it runs only when asked for.
option(MIXPREC_COMPILE_TIME_HEADER_ONLY_RUNTIME_MODEL
       "compile_time also measures a header-only RuntimeModel TU (over a minute)" OFF)
add_test(NAME compile_time
  COMMAND ${CMAKE_COMMAND} -DCOMPILER=${CMAKE_CXX_COMPILER} -DHEADER_ONLY_FLAGS=${header_only_consumer_flags}
          -DSINGLE_TU_FLAGS=${consumer_flags} -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}/compile_time
          -DOUTPUT_DIR=${CMAKE_CURRENT_BINARY_DIR}
          -DHEADER_ONLY_RUNTIME_MODEL=${MIXPREC_COMPILE_TIME_HEADER_ONLY_RUNTIME_MODEL}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/compile_time/measure.cmake)
# The longest test: started first (COST), it runs beside the others instead of after them.
set_tests_properties(compile_time PROPERTIES LABELS "compile_time" TIMEOUT 1800 COST 1000)
