# Settings every directory of CUDA sources needs (platforms/cuda, trainer/cuda).
#
# mt_cuda_directory_options(): the project's compile options are g++ options.
# nvcc passes the warning flags to its host compiler (-Xcompiler) and drops
# the rest (sanitizers), which host stubs do without. Call it before
# add_library: targets copy the directory's options when created.
#
# mt_cuda_target(TARGET): C++20 (CMake 3.25 does not know nvcc's flag for it
# yet, so it is named here) and the static CUDA runtime.
function(mt_cuda_directory_options)
  get_directory_property(host_options COMPILE_OPTIONS)
  set(cuda_options "")
  foreach(option IN LISTS host_options)
    string(REPLACE "," "$<COMMA>" option "${option}")
    if(option MATCHES "^-W")
      list(APPEND cuda_options "$<IF:$<COMPILE_LANGUAGE:CUDA>,-Xcompiler=${option},${option}>")
    else()
      list(APPEND cuda_options "$<$<NOT:$<COMPILE_LANGUAGE:CUDA>>:${option}>")
    endif()
  endforeach()
  set_directory_properties(PROPERTIES COMPILE_OPTIONS "${cuda_options}")
endfunction()

macro(mt_cuda_target target)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set_target_properties(${target} PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON
                                             CUDA_RUNTIME_LIBRARY Static)
endmacro()
