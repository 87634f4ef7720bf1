# The dependencies of mixprec::mixprec, shared by the build tree and the installed package.
# All of them are Debian packages (scripts/install-deps.sh installs them).
include_guard(GLOBAL)
include(CMakeFindDependencyMacro)

find_dependency(Boost 1.74)                 # Boost::headers (Hana)
find_dependency(Eigen3 3.4 NO_MODULE)       # Eigen3::Eigen
find_dependency(nlohmann_json 3.10)         # nlohmann_json::nlohmann_json
find_dependency(Threads)

# mixprec_<name>: a dependency through its own CMake config where it ships one (target
# <config_target> of package <package>), else through pkg-config's <module>. A macro, so that
# find_dependency's failure ends the including file.
macro(mixprec_config_or_pkg_config name package config_target module)
  find_package(${package} CONFIG QUIET)
  if(NOT TARGET mixprec_${name})
    add_library(mixprec_${name} INTERFACE IMPORTED)
    if(TARGET ${config_target})
      target_link_libraries(mixprec_${name} INTERFACE ${config_target})
    else()
      find_dependency(PkgConfig)
      pkg_check_modules(MIXPREC_LIB${name} REQUIRED IMPORTED_TARGET ${module})
      target_link_libraries(mixprec_${name} INTERFACE PkgConfig::MIXPREC_LIB${name})
    endif()
  endif()
endmacro()

# Highway (libhwy-dev ships both).
mixprec_config_or_pkg_config(hwy hwy hwy::hwy libhwy)
# RE2 (libre2-dev): DTypePolicyMap's regexes. Debian 12's libre2-dev ships only pkg-config's re2.
mixprec_config_or_pkg_config(re2 re2 re2::re2 re2)

# zlib (zlib1g-dev): only mixprec::datasets needs it, so it is looked for without being required.
find_package(ZLIB QUIET)
