# Builds the consumer project against sluice, then runs it. MODE
# find_package: sluice configured as a library alone (no tools, no tests)
# must configure; the tree that ctest runs in (BINARY, already built) is
# installed into WORK/prefix, and the consumer, compiled with that tree's
# CXX_FLAGS (a sanitizer's, under `make test`), finds it there. Compiling
# the library again would check nothing more, and cost CI a minute and a half.
# MODE add_subdirectory: the consumer builds sluice from the source tree.
# REDIS (ON when the tree built sluice::redis): the consumer also builds and
# runs its store program against sluice::redis.
file(REMOVE_RECURSE ${WORK})
set(consumer_src ${SOURCE}/tests/consumer)
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/sluice -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
      -DSLUICE_BUILD_TOOLS=OFF -DSLUICE_BUILD_TESTS=OFF -DSLUICE_BUILD_EXAMPLES=OFF -DCMAKE_INSTALL_PREFIX=${WORK}/prefix)
  run(${CMAKE_COMMAND} --install ${BINARY} --prefix ${WORK}/prefix)
  run(${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK}/consumer -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK}/prefix
      "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" -DSLUICE_CONSUMER_REDIS=${REDIS})
else()
  # Unoptimised, without debug information: what is checked is that the
  # project builds as a subdirectory, not how fast it runs (a third of the
  # test's time at the default RelWithDebInfo).
  run(${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK}/consumer -G ${GENERATOR} -DSLUICE_SOURCE=${SOURCE}
      -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0
      -DSLUICE_BUILD_TOOLS=OFF -DSLUICE_BUILD_TESTS=OFF -DSLUICE_CONSUMER_REDIS=${REDIS})
endif()
run(${CMAKE_COMMAND} --build ${WORK}/consumer)
run(${WORK}/consumer/consumer)
message(STATUS "${last_output}")
if(MODE STREQUAL "find_package")
  run(${WORK}/consumer/consumer_keyed)
  message(STATUS "${last_output}")
endif()
if(REDIS)
  run(${WORK}/consumer/consumer_store)
  message(STATUS "${last_output}")
endif()
