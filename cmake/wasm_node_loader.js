// Prepended to every WebAssembly program and to libmt.js (cmake/wasm.cmake).
// Emscripten 3.1.6's loader takes Node.js 18+'s fetch() for a browser's and
// fails on a file path ("Failed to parse URL"); under Node.js, hand it the
// .wasm beside the .js instead, so `node program.js` just works.
if (typeof process == 'object' && typeof require == 'function' && typeof __filename == 'string' &&
    !Module['wasmBinary']) {
  Module['wasmBinary'] = require('fs').readFileSync(__filename.replace(/\.js$/, '.wasm'));
}
