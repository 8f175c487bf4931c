# The installed service's paths (cmake/install_dirs.cmake; run with cmake -P):
# first GNUInstallDirs' rules for the configuration directory, case by case,
# then a real `cmake --install` of the tree ctest runs in (BINARY) into a
# staging folder (DESTDIR=WORK) for the prefixes a package and a local
# build use, reading back where the configuration went and what the
# systemd unit names. A unit naming /usr//etc/sluice/sluice.toml, or a
# configuration under /usr/etc, fails.
include(${SOURCE}/cmake/install_dirs.cmake)

function(expect what got want)
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "${what}: got '${got}', want '${want}'")
  endif()
endfunction()

foreach(row
    "/usr|etc|/etc" "/usr/|etc|/etc" "/|etc|/etc" "/usr/local|etc|/usr/local/etc"
    "/opt/sluice|etc|/etc/opt/sluice" "/home/u/p|etc|/home/u/p/etc"
    "/usr|/etc|/etc" "/usr/local|/etc|/etc" "/usr|/etc/|/etc" "/srv/x|conf|/srv/x/conf")
  string(REPLACE "|" ";" f "${row}")
  list(GET f 0 prefix)
  list(GET f 1 sysconf)
  list(GET f 2 want)
  sluice_full_sysconfdir(got "${prefix}" "${sysconf}")
  expect("sysconfdir for prefix ${prefix}, CMAKE_INSTALL_SYSCONFDIR ${sysconf}" "${got}" "${want}")
endforeach()
sluice_full_dir(got "/usr/" "bin")
expect("bindir for prefix /usr/" "${got}" "/usr/bin")
sluice_full_dir(got "/usr" "/opt/bin")
expect("an absolute bindir" "${got}" "/opt/bin")

file(REMOVE_RECURSE ${WORK})
foreach(case "/usr|/etc/sluice" "/usr/local|/usr/local/etc/sluice")
  string(REPLACE "|" ";" f "${case}")
  list(GET f 0 prefix)
  list(GET f 1 confdir)
  set(stage ${WORK}/stage${prefix})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env DESTDIR=${stage} ${CMAKE_COMMAND} --install ${BINARY} --prefix ${prefix}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cmake --install --prefix ${prefix} failed (${rc}):\n${out}\n${err}")
  endif()
  if(NOT EXISTS ${stage}${confdir}/sluice.toml)
    message(FATAL_ERROR "prefix ${prefix}: no configuration at ${confdir}/sluice.toml:\n${out}")
  endif()
  set(unit ${stage}${prefix}/lib/systemd/system/sluice.service)
  file(STRINGS ${unit} exec REGEX "^Exec(Start|StartPre)=")
  foreach(line IN LISTS exec)
    if(NOT line MATCHES " ${confdir}/sluice.toml( |$)" OR NOT line MATCHES "=${prefix}/bin/sluice ")
      message(FATAL_ERROR "prefix ${prefix}: the unit's '${line}' does not name ${prefix}/bin/sluice and ${confdir}/sluice.toml")
    endif()
  endforeach()
  list(LENGTH exec n)
  expect("prefix ${prefix}: Exec lines naming the configuration" "${n}" "2")
  # An operator's configuration is kept by the next install.
  file(WRITE ${stage}${confdir}/sluice.toml "# the operator's\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env DESTDIR=${stage} ${CMAKE_COMMAND} --install ${BINARY} --prefix ${prefix}
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  file(READ ${stage}${confdir}/sluice.toml kept)
  expect("prefix ${prefix}: rc of a second install" "${rc}" "0")
  expect("prefix ${prefix}: the operator's configuration after a second install" "${kept}" "# the operator's\n")
endforeach()
file(REMOVE_RECURSE ${WORK})
message(STATUS "install paths: the configuration and the unit's paths follow GNUInstallDirs")
