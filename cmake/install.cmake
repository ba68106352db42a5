# Installation: `cmake --install <build> [--prefix <dir>]` installs
#   include/lstmop/*.h                      the public headers
#   lib/liblstmop.a                         the library (lib64/ or lib/<triplet>/ per GNUInstallDirs)
#   lib/cmake/lstmop/lstmopConfig.cmake     the package config: find_package(lstmop)
#   lib/cmake/lstmop/lstmopConfigVersion.cmake
#   lib/cmake/lstmop/lstmopTargets*.cmake   the exported target lstmop::lstmop
# Included from the root CMakeLists.txt (after src/ made the target lstmop).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(LSTMOP_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/lstmop" CACHE STRING
    "Where the CMake package files are installed, relative to the prefix")

install(TARGETS lstmop EXPORT lstmopTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/lstmop
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(EXPORT lstmopTargets
  NAMESPACE lstmop::
  FILE lstmopTargets.cmake
  DESTINATION ${LSTMOP_INSTALL_CMAKEDIR})

# A static library's private link dependencies become the consumer's ($<LINK_ONLY:...> in
# the export), so the config must find the packages of the imported targets lstmop links:
# one find_dependency() per package. The package is the target's namespace (Threads::Threads
# -> Threads, OpenMP::OpenMP_CXX -> OpenMP) except where a package names its targets otherwise
# (DNNL::dnnl comes from package dnnl). Plain library paths need nothing.
get_target_property(lstmop_link_libraries lstmop LINK_LIBRARIES)
set(lstmop_dependency_packages "")
# (Imported targets found in src/ are not visible from here, so they are matched by name.)
foreach(item IN LISTS lstmop_link_libraries)
  string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" item "${item}")
  if(item MATCHES "^([A-Za-z0-9_]+)::" AND NOT CMAKE_MATCH_1 STREQUAL "lstmop")
    set(lstmop_package ${CMAKE_MATCH_1})
    if(lstmop_package STREQUAL "DNNL")
      set(lstmop_package dnnl)
    endif()
    list(APPEND lstmop_dependency_packages ${lstmop_package})
  endif()
endforeach()
list(REMOVE_DUPLICATES lstmop_dependency_packages)
set(LSTMOP_CONFIG_DEPENDENCIES "")
foreach(package IN LISTS lstmop_dependency_packages)
  string(APPEND LSTMOP_CONFIG_DEPENDENCIES "find_dependency(${package})\n")
endforeach()

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/lstmopConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lstmopConfig.cmake
  INSTALL_DESTINATION ${LSTMOP_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/lstmopConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/lstmopConfig.cmake
  ${PROJECT_BINARY_DIR}/lstmopConfigVersion.cmake
  DESTINATION ${LSTMOP_INSTALL_CMAKEDIR})
