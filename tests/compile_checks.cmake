# Tests that run the compiler or CMake itself:
#  - every public header compiles on its own (one test per header, as Boost.Hana does);
#  - compile-fail snippets fail with the message the user is meant to read (as fmt and Eigen do);
#  - packaging: a consumer project builds against an installed tree and through add_subdirectory.

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
set(consumer_flags ${CMAKE_CURRENT_BINARY_DIR}/consumer_flags.rsp)
# Single-TU mode keeps these checks fast: they see the kernels' declarations, and
# kernels/implementation.hpp (checked on its own like every header) holds the rest.
file(GENERATE OUTPUT ${consumer_flags} CONTENT
"-std=c++20 -Wall -Wextra -Wpedantic -Werror -DMIXPREC_SEPARATE_KERNELS -I${mixprec_include_dir}
$<$<BOOL:${probe_includes}>:-isystem $<JOIN:${probe_includes},\n-isystem >>
$<$<BOOL:${probe_definitions}>:-D$<JOIN:${probe_definitions},\n-D>>
$<JOIN:${probe_options},\n>
")

# One test per public header. *-inl.hpp files are per-target bodies and kernels/detail/dispatch_*
# are pieces of kernels/implementation.hpp: neither is meant to stand alone.
file(GLOB_RECURSE public_headers CONFIGURE_DEPENDS RELATIVE ${mixprec_include_dir}
  ${mixprec_include_dir}/mixprec/*.hpp)
list(FILTER public_headers EXCLUDE REGEX "(-inl\\.hpp|/detail/dispatch_[a-z_]+\\.hpp)$")
foreach(header IN LISTS public_headers)
  string(REGEX REPLACE "[/.]" "_" check_name "${header}")
  set(source ${CMAKE_CURRENT_BINARY_DIR}/header_checks/${check_name}.cpp)
  file(CONFIGURE OUTPUT ${source} CONTENT "#include <${header}>\n#include <${header}>\n")
  add_test(NAME header.${header} COMMAND ${CMAKE_CXX_COMPILER} @${consumer_flags} -fsyntax-only ${source})
  set_tests_properties(header.${header} PROPERTIES LABELS "headers")
endforeach()

# compile_fail/<name>.cpp: must compile with -DMIXPREC_COMPILE_FAIL_CONTROL, and fail without
# it, printing the text of its "// expect: " line.
file(GLOB compile_fail_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/*.cpp)
foreach(source IN LISTS compile_fail_sources)
  get_filename_component(check_name ${source} NAME_WE)
  add_test(NAME compile_fail.${check_name}
    COMMAND ${CMAKE_COMMAND} -DCOMPILER=${CMAKE_CXX_COMPILER} -DFLAGS=${consumer_flags} -DSOURCE=${source}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/check.cmake)
  set_tests_properties(compile_fail.${check_name} PROPERTIES LABELS "compile_fail")
endforeach()

foreach(mode IN ITEMS install subdirectory)
  add_test(NAME package.${mode}
    COMMAND ${CMAKE_COMMAND} -DMODE=${mode} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBUILD_DIR=${PROJECT_BINARY_DIR}
            -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/package_${mode} -DGENERATOR=${CMAKE_GENERATOR}
            -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/package/run.cmake)
  set_tests_properties(package.${mode} PROPERTIES LABELS "package" TIMEOUT 600)
endforeach()
