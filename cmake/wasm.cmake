# WebAssembly with Debian's Emscripten (emcmake cmake ..., scripts/test_wasm.sh):
# libmt, the tools and the tests as .js + .wasm programs run by Node.js.
#
# Single-threaded (no -pthread): a threaded wasm needs SharedArrayBuffer,
# which browsers only give cross-origin-isolated pages; sessions refuse
# num_threads > 1 here (mt::kHasThreads). SIMD128 throughout (every current
# browser, Node.js >= 16.4). Header-only dependencies (xsimd, FlatBuffers,
# Catch2) come from the host's /usr/include through a folder of links, so
# that the host's C library headers never shadow Emscripten's; flatc is the
# host's. SentencePiece (vocabulary training, parity tests) is left out.
set(mt_host_headers ${CMAKE_BINARY_DIR}/host-headers)
file(MAKE_DIRECTORY ${mt_host_headers})
foreach(dir xsimd flatbuffers catch2)
  if(NOT EXISTS /usr/include/${dir})
    message(FATAL_ERROR "WebAssembly build: /usr/include/${dir} is missing (scripts/install-deps.sh installs it)")
  endif()
  file(CREATE_LINK /usr/include/${dir} ${mt_host_headers}/${dir} SYMBOLIC)
endforeach()
add_library(xsimd INTERFACE IMPORTED)
add_library(flatbuffers::flatbuffers INTERFACE IMPORTED)
add_library(Catch2::Catch2 INTERFACE IMPORTED)
foreach(target xsimd flatbuffers::flatbuffers Catch2::Catch2)
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${mt_host_headers})
endforeach()
list(APPEND CMAKE_MODULE_PATH /usr/lib/cmake/Catch2)  # Catch.cmake: catch_discover_tests
add_library(Threads::Threads INTERFACE IMPORTED)     # nothing to link without -pthread
find_program(FLATC flatc REQUIRED NO_CMAKE_FIND_ROOT_PATH)

set(MT_HAVE_SENTENCEPIECE OFF)
set(MT_BUILD_TRAINER OFF CACHE BOOL "" FORCE)
set(MT_BUILD_BENCHMARKS OFF CACHE BOOL "" FORCE)
set(MT_BUILD_SHARED OFF CACHE BOOL "" FORCE)
set(MT_CUDA OFF CACHE STRING "" FORCE)

# Wasm exception handling (Node.js >= 17, current browsers): the C API's
# guard catches what the C++ code throws instead of aborting.
add_compile_options(-msimd128 -fwasm-exceptions)
add_link_options(-fwasm-exceptions -sALLOW_MEMORY_GROWTH=1)
# Programs (tools, tests) reach the host's files through Node.js.
add_link_options(-sNODERAWFS=1 -sEXIT_RUNTIME=1)
# Emscripten 3.1.6's loader takes Node.js 18+'s fetch() for a browser's and
# fails on a file path: under Node.js the programs read their .wasm themselves.
add_link_options(--pre-js ${CMAKE_CURRENT_LIST_DIR}/wasm_node_loader.js)
set(CMAKE_CROSSCOMPILING_EMULATOR node)
