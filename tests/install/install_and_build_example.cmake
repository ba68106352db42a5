# cmake -P script run by the install_find_package test (see CMakeLists.txt beside it).
# Inputs: BUILD_DIR, CONFIG, EXAMPLE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER, CONSUMER_FLAGS.
cmake_minimum_required(VERSION 3.18)

set(prefix ${WORK_DIR}/prefix)
set(consumer ${WORK_DIR}/consumer)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(step_output "${out}${err}" PARENT_SCOPE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (exit ${rc}):\n${out}${err}")
  endif()
  message(STATUS "install test: ${what}: ok")
endfunction()

# 1. Install the build into an empty prefix.
set(config_args "")
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()
run_step("cmake --install into ${prefix}" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} ${config_args})
file(GLOB_RECURSE installed_configs ${prefix}/*/lstmopConfig.cmake)
file(GLOB_RECURSE installed_headers ${prefix}/include/lstmop/*.h)
file(GLOB_RECURSE installed_libraries ${prefix}/*liblstmop.a)
foreach(kind configs headers libraries)
  if(NOT installed_${kind})
    message(FATAL_ERROR "install test: no installed ${kind} under ${prefix}")
  endif()
endforeach()
foreach(header error.h lstm.h lstmop.h reference.h tensor.h)
  if(NOT EXISTS ${prefix}/include/lstmop/${header})
    message(FATAL_ERROR "install test: ${prefix}/include/lstmop/${header} was not installed")
  endif()
endforeach()

# 2. Configure the example as a separate project that finds only the installed package:
#    no package registry, and the build tree is not on any search path.
run_step("configure the example with find_package(lstmop)"
  ${CMAKE_COMMAND} -S ${EXAMPLE_DIR} -B ${consumer} -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
    "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}")
string(REGEX MATCH "lstmop [0-9.]+ from [^\n]*" found "${step_output}")
message(STATUS "install test: ${found}")
string(FIND "${found}" "${prefix}/" at)
if(NOT at GREATER 0)
  message(FATAL_ERROR "install test: the example did not find lstmop in ${prefix}:\n${step_output}")
endif()

# 3. Build it and run it: it exits non-zero unless the loss falls below half the first one.
run_step("build the example" ${CMAKE_COMMAND} --build ${consumer})
find_program(example sequence_regression PATHS ${consumer} ${consumer}/Release NO_DEFAULT_PATH)
if(NOT example)
  message(FATAL_ERROR "install test: the example program was not built in ${consumer}")
endif()
run_step("run the example" ${example})
message(STATUS "install test: example output:\n${step_output}")
if(NOT step_output MATCHES "loss [0-9.]+ -> [0-9.]+: fell below half")
  message(FATAL_ERROR "install test: the example's output does not report a falling loss")
endif()
