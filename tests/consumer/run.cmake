# Builds the consumer project against sluice (MODE find_package: configure,
# build and install the core only into WORK/prefix first; MODE
# add_subdirectory: point the consumer at the source tree), then runs it.
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
      -DSLUICE_BUILD_TOOLS=OFF -DSLUICE_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX=${WORK}/prefix)
  run(${CMAKE_COMMAND} --build ${WORK}/sluice)
  run(${CMAKE_COMMAND} --install ${WORK}/sluice)
  run(${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK}/consumer -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK}/prefix)
else()
  run(${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK}/consumer -G ${GENERATOR} -DSLUICE_SOURCE=${SOURCE}
      -DSLUICE_BUILD_TOOLS=OFF -DSLUICE_BUILD_TESTS=OFF)
endif()
run(${CMAKE_COMMAND} --build ${WORK}/consumer)
run(${WORK}/consumer/consumer)
message(STATUS "${last_output}")
