# The dependencies of mixprec::mixprec, shared by the build tree and the installed package.
# All of them are Debian packages (scripts/install-deps.sh installs them).
include_guard(GLOBAL)
include(CMakeFindDependencyMacro)

find_dependency(Boost 1.74)                 # Boost::headers (Hana)
find_dependency(Eigen3 3.4 NO_MODULE)       # Eigen3::Eigen
find_dependency(nlohmann_json 3.10)         # nlohmann_json::nlohmann_json
find_dependency(Threads)

# Highway: its CMake config if present, else pkg-config's libhwy (both ship in libhwy-dev).
find_package(hwy CONFIG QUIET)
if(NOT TARGET mixprec_hwy)
  add_library(mixprec_hwy INTERFACE IMPORTED)
  if(TARGET hwy::hwy)
    target_link_libraries(mixprec_hwy INTERFACE hwy::hwy)
  else()
    find_dependency(PkgConfig)
    pkg_check_modules(MIXPREC_LIBHWY REQUIRED IMPORTED_TARGET libhwy)
    target_link_libraries(mixprec_hwy INTERFACE PkgConfig::MIXPREC_LIBHWY)
  endif()
endif()

# RE2 (libre2-dev): DTypePolicyMap's regexes. Its CMake config if present (newer RE2), else
# pkg-config's re2 (Debian 12's libre2-dev ships only that).
find_package(re2 CONFIG QUIET)
if(NOT TARGET mixprec_re2)
  add_library(mixprec_re2 INTERFACE IMPORTED)
  if(TARGET re2::re2)
    target_link_libraries(mixprec_re2 INTERFACE re2::re2)
  else()
    find_dependency(PkgConfig)
    pkg_check_modules(MIXPREC_LIBRE2 REQUIRED IMPORTED_TARGET re2)
    target_link_libraries(mixprec_re2 INTERFACE PkgConfig::MIXPREC_LIBRE2)
  endif()
endif()

# zlib (zlib1g-dev): only mixprec::datasets needs it, so it is looked for without being required.
find_package(ZLIB QUIET)
