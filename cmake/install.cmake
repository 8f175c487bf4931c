# Install rules and package config, so that both find_package(sluice) and
# add_subdirectory(sluice) give the library targets: sluice::core,
# sluice::keyed (the memory store and the store registry), sluice::remote
# (breaker, deny cache) and, when it was built, sluice::redis (the Redis
# store; `find_package(sluice COMPONENTS redis)` requires it). Each target's
# own CMakeLists installs it into the export set sluiceTargets; every public
# header is under include/sluice/.
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
# and a systemd unit.
if(TARGET sluice)
  install(FILES ${PROJECT_SOURCE_DIR}/etc/sluice.toml DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/sluice)
  install(FILES ${PROJECT_SOURCE_DIR}/etc/nginx-sluice.conf DESTINATION ${CMAKE_INSTALL_DATADIR}/sluice)
  # The unit names the installed paths, so it is written at install time
  # (`cmake --install --prefix P` gives P's paths, the configuration in
  # P/etc/sluice, beside where the file is installed).
  install(CODE "
    set(CMAKE_INSTALL_FULL_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
    set(CMAKE_INSTALL_FULL_SYSCONFDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SYSCONFDIR}\")
    set(unit \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/sluice.service\")
    message(STATUS \"Installing: \${unit}\")
    configure_file(${PROJECT_SOURCE_DIR}/etc/sluice.service.in \"\${unit}\" @ONLY)
  ")
endif()
