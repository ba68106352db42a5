# lstmop kernels (src/kernels/): self-contained CPU kernels with run-time ISA
# dispatch, target `lstmop_kernels`. Included by tests/kernels and bench/ now,
# by src/CMakeLists.txt when the production path adopts them (phase B).
# Each ISA's bodies live in their own files compiled with that ISA's flags;
# everything else is built for the baseline x86-64.
if(TARGET lstmop_kernels)
  return()
endif()

find_path(LSTMOP_SLEEF_INCLUDE_DIR sleef.h PATH_SUFFIXES x86_64-linux-gnu)
find_library(LSTMOP_SLEEF_LIBRARY sleef)
if(NOT LSTMOP_SLEEF_INCLUDE_DIR OR NOT LSTMOP_SLEEF_LIBRARY)
  message(FATAL_ERROR "lstmop kernels need SLEEF (Debian: libsleef-dev)")
endif()

set(lstmop_kernels_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(lstmop_kernels STATIC
  ${lstmop_kernels_dir}/cpu_isa.cpp
  ${lstmop_kernels_dir}/recurrent_gemm.cpp
  ${lstmop_kernels_dir}/recurrent_gemm_avx2.cpp
  ${lstmop_kernels_dir}/recurrent_gemm_avx512.cpp
  ${lstmop_kernels_dir}/lstm_gates.cpp
  ${lstmop_kernels_dir}/lstm_gates_avx2.cpp
  ${lstmop_kernels_dir}/lstm_gates_avx512.cpp
)
set_source_files_properties(
  ${lstmop_kernels_dir}/recurrent_gemm_avx2.cpp ${lstmop_kernels_dir}/lstm_gates_avx2.cpp
  PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma")
set_source_files_properties(
  ${lstmop_kernels_dir}/recurrent_gemm_avx512.cpp ${lstmop_kernels_dir}/lstm_gates_avx512.cpp
  PROPERTIES COMPILE_OPTIONS "-mavx512f;-mavx2;-mfma")
target_include_directories(lstmop_kernels PUBLIC ${lstmop_kernels_dir}
                           PRIVATE ${LSTMOP_SLEEF_INCLUDE_DIR})
target_link_libraries(lstmop_kernels PRIVATE ${LSTMOP_SLEEF_LIBRARY})
target_compile_features(lstmop_kernels PUBLIC cxx_std_17)
# No compiler-chosen contraction: the kernels' results are defined by their
# explicit fma calls, identical in every ISA's body.
target_compile_options(lstmop_kernels PRIVATE -Wall -Wextra -ffp-contract=off)
set_target_properties(lstmop_kernels PROPERTIES POSITION_INDEPENDENT_CODE ON)
