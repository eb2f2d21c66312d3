/*
 * MT_API marks what libmt's shared library exports: the C API and the public
 * C++ classes. The shared library hides everything else (internal kernels,
 * the tokenizer, the search), so programs link only against this interface.
 * Plain C: mt.h includes it too.
 */
#ifndef MT_EXPORT_H
#define MT_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define MT_API __attribute__((visibility("default")))
#else
#define MT_API
#endif

#endif
