/* The libmt WebAssembly module for JavaScript (web/CMakeLists.txt): libmt's
 * C API (mt.h) exported from the wasm, wrapped by web/translator.js. The
 * functions come from the static libmt; this file only gives the module a
 * source of its own. */
#include "mt/mt.h"
