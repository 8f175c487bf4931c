# Where GNUInstallDirs puts the configuration, worked out when `cmake
# --install` runs: the prefix may be given only then (`--prefix P`), and
# CMAKE_INSTALL_FULL_SYSCONFDIR, computed when the project was configured,
# would name the configure-time prefix. The rules are GNUInstallDirs': an
# absolute directory stands as it is; a relative one is under the prefix,
# except for the prefixes `/` and `/usr` (`etc` is `/etc`) and `/opt/<pkg>`
# (`etc` is `/etc/opt/<pkg>`). Included by the install script and by the
# test that checks the rules (tests/install/).
function(sluice_full_sysconfdir out prefix sysconfdir)
  string(REGEX REPLACE "/+$" "" p "${prefix}")
  if(IS_ABSOLUTE "${sysconfdir}")
    set(dir "${sysconfdir}")
  elseif(p STREQUAL "" OR p STREQUAL "/usr")
    set(dir "/${sysconfdir}")
  elseif(p MATCHES "^/opt/(.+)$")
    set(dir "/${sysconfdir}/opt/${CMAKE_MATCH_1}")
  else()
    set(dir "${p}/${sysconfdir}")
  endif()
  string(REGEX REPLACE "/+" "/" dir "${dir}")
  string(REGEX REPLACE "(.)/$" "\\1" dir "${dir}")
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

# The same for a directory that is always under the prefix (bin, the unit's
# lib/systemd/system): an absolute one stands as it is.
function(sluice_full_dir out prefix dir)
  string(REGEX REPLACE "/+$" "" p "${prefix}")
  if(IS_ABSOLUTE "${dir}")
    set(full "${dir}")
  else()
    set(full "${p}/${dir}")
  endif()
  string(REGEX REPLACE "/+" "/" full "${full}")
  set(${out} "${full}" PARENT_SCOPE)
endfunction()
