# Install and export rules: headers, the posenc::posenc target and a package config that finds its dependencies.
include(CMakePackageConfigHelpers)

set(POSENC_CMAKE_DIR "${CMAKE_INSTALL_DATADIR}/cmake/posenc"
    CACHE STRING "Where posencConfig.cmake is installed, relative to the prefix")

install(TARGETS posenc EXPORT posencTargets FILE_SET HEADERS)
install(EXPORT posencTargets NAMESPACE posenc:: DESTINATION "${POSENC_CMAKE_DIR}")
# posenc::mpi in its own export, which the package loads only where MPI is found: a consumer
# without MPI can still use posenc::posenc.
if(POSENC_HAS_MPI)
  install(TARGETS posenc_mpi EXPORT posencMpiTargets)
  install(EXPORT posencMpiTargets NAMESPACE posenc:: DESTINATION "${POSENC_CMAKE_DIR}")
endif()

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/posencConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/posencConfig.cmake"
  INSTALL_DESTINATION "${POSENC_CMAKE_DIR}")
# (posencConfig.cmake.in reads POSENC_HAS_MPI: the package finds MPI only when it exports posenc::mpi)
# A header-only library: any architecture's build may use the installed package.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/posencConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES "${PROJECT_BINARY_DIR}/posencConfig.cmake"
              "${PROJECT_BINARY_DIR}/posencConfigVersion.cmake"
        DESTINATION "${POSENC_CMAKE_DIR}")
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/posenc")
