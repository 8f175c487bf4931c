# Install rules and package config, so that both find_package(sluice) and
# add_subdirectory(sluice) give the library targets: sluice::core,
# sluice::keyed (the memory store and the store registry), sluice::remote
# (breaker, deny cache) and, when it was built, sluice::redis (the Redis
# store; `find_package(sluice COMPONENTS redis)` requires it). Each target's
# own CMakeLists installs it into the export set sluiceTargets; every public
# header is under include/sluice/: each target's in its folder (core/, keyed/,
# remote/, redis/), the umbrella sluice.hpp, and the forwarding headers at the
# old flat paths (kept for one release), all installed by the one rule below.
include(CMakePackageConfigHelpers)
if(TARGET sluice_redis)
  set(SLUICE_HAS_REDIS ON)
else()
  set(SLUICE_HAS_REDIS OFF)
endif()

install(TARGETS sluice_core EXPORT sluiceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sluice DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT sluiceTargets NAMESPACE sluice:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sluice)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/sluiceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/sluiceConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sluice)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sluiceConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sluiceConfig.cmake ${PROJECT_BINARY_DIR}/sluiceConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sluice)
if(TARGET sluice)
  install(TARGETS sluice RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# sluice serve: a sample configuration, the nginx configuration it documents,
# and a systemd unit. The unit names the installed paths, so it is written at
# install time, and the configuration goes where GNUInstallDirs says for the
# prefix given then (`cmake --install --prefix /usr` puts it in /etc/sluice,
# as a package would; cmake/install_dirs.cmake). A configuration already
# there is the operator's and is kept; the sample is always also installed
# as share/sluice/sluice.toml.
if(TARGET sluice)
  install(FILES ${PROJECT_SOURCE_DIR}/etc/sluice.toml ${PROJECT_SOURCE_DIR}/etc/nginx-sluice.conf
          DESTINATION ${CMAKE_INSTALL_DATADIR}/sluice)
  install(CODE "
    include(${CMAKE_CURRENT_LIST_DIR}/install_dirs.cmake)
    sluice_full_dir(CMAKE_INSTALL_FULL_BINDIR \"\${CMAKE_INSTALL_PREFIX}\" \"${CMAKE_INSTALL_BINDIR}\")
    sluice_full_sysconfdir(CMAKE_INSTALL_FULL_SYSCONFDIR \"\${CMAKE_INSTALL_PREFIX}\" \"${CMAKE_INSTALL_SYSCONFDIR}\")
    sluice_full_dir(unit_dir \"\${CMAKE_INSTALL_PREFIX}\" lib/systemd/system)
    set(config \"\$ENV{DESTDIR}\${CMAKE_INSTALL_FULL_SYSCONFDIR}/sluice/sluice.toml\")
    if(EXISTS \"\${config}\")
      message(STATUS \"Keeping: \${config} (the sample is in ${CMAKE_INSTALL_DATADIR}/sluice)\")
    else()
      message(STATUS \"Installing: \${config}\")
      file(MAKE_DIRECTORY \"\$ENV{DESTDIR}\${CMAKE_INSTALL_FULL_SYSCONFDIR}/sluice\")
      file(COPY_FILE ${PROJECT_SOURCE_DIR}/etc/sluice.toml \"\${config}\")
    endif()
    set(unit \"\$ENV{DESTDIR}\${unit_dir}/sluice.service\")
    message(STATUS \"Installing: \${unit}\")
    configure_file(${PROJECT_SOURCE_DIR}/etc/sluice.service.in \"\${unit}\" @ONLY)
  ")
endif()
