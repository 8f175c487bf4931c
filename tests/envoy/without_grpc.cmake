# Configures sluice as if gRPC were not installed (find_package(Protobuf)
# disabled) and checks that cmake says the Envoy front end is left out, that
# no target of it exists, and that the one source that changes with it
# (serve_cmd.cpp) compiles. With FULL=ON it also builds the whole command and
# checks that `sluice serve` refuses a [grpc] listener (exit 2, a message
# naming grpc.listen) — minutes on 2 cores, so not every ctest run does it.
# -DSOURCE=... -DWORK=... -DGENERATOR=... [-DLAUNCHER=ccache] [-DFULL=ON]
file(REMOVE_RECURSE ${WORK})
set(launcher)
if(LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK} -G ${GENERATOR} -DSLUICE_WERROR=ON -DSLUICE_BUILD_TESTS=OFF
          -DCMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON -DCMAKE_OPTIMIZE_DEPENDENCIES=ON ${launcher}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure failed (${rc}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "Envoy's gRPC rate limit service is left out: gRPC or protobuf not found")
  message(FATAL_ERROR "cmake did not say that the Envoy front end is left out:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK} --target help OUTPUT_VARIABLE targets)
if(targets MATCHES "sluice_envoy")
  message(FATAL_ERROR "a target of the Envoy front end exists without gRPC:\n${targets}")
endif()
if(FULL)
  set(what sluice)
else()
  set(what tools/sluice/CMakeFiles/sluice_cli.dir/serve_cmd.cpp.o)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK} --target ${what} -j 2
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the build without gRPC failed (${rc}):\n${out}\n${err}")
endif()
if(FULL)
  file(WRITE ${WORK}/grpc.toml "[policies]\napi = \"gcra 10/1s\"\n[grpc]\nlisten = \"127.0.0.1:0\"\n")
  execute_process(COMMAND ${WORK}/sluice serve --config ${WORK}/grpc.toml RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 20)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "grpc.listen: this sluice was built without gRPC")
    message(FATAL_ERROR "sluice serve did not refuse the grpc listener (exit ${rc}):\n${err}")
  endif()
  message(STATUS "sluice serve without gRPC: ${err}")
endif()
message(STATUS "sluice builds without gRPC (${what})")
