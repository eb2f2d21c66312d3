#!/usr/bin/env bash
# `cmake --install`, then the examples built against the installed tree only
# (find_package(libmt) and pkg-config; the build tree is not on any path) and
# run on the shipped model: they must print what mt_translate prints.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR
set -u
build=$1
src=$2
dir=$3
rm -rf "$dir"
mkdir -p "$dir"
prefix=$dir/prefix
failures=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

cmake --install "$build" --prefix "$prefix" > "$dir/install.log" 2>&1
check "cmake --install succeeds" test $? -eq 0
check "the headers are installed" test -f "$prefix/include/mt/mt.h" -a -f "$prefix/include/mt/mt.hpp" -a -f "$prefix/include/mt/activation.hpp"
check "the static and the shared library are installed" \
  test -f "$prefix/lib/libmt.a" -a -f "$prefix/lib/libmt.so" -a -f "$prefix/lib/libmt.so.0"
check "the CMake package and the pkg-config file are installed" \
  test -f "$prefix/lib/cmake/libmt/libmtConfig.cmake" -a -f "$prefix/lib/pkgconfig/libmt.pc"
# The shared library exports the API: C functions and mt:: names (the rest is
# hidden); libstdc++'s templates instantiated for it are the only others.
nm -D --defined-only "$prefix/lib/libmt.so" | awk '{print $3}' | c++filt > "$dir/exported.txt"
grep -vE '^(mt_|mt::|std::|typeinfo (name )?for (mt|std)::|vtable for (mt|std)::|void std::|_init$|_fini$)' \
  "$dir/exported.txt" > "$dir/unexpected.txt"
check "libmt.so exports only the API (see unexpected.txt)" test ! -s "$dir/unexpected.txt"
check "libmt.so exports the C API" test "$(grep -c '^mt_' "$dir/exported.txt")" -ge 15
check "libmt.so hides the internals" test "$(grep -c 'mt::detail::' "$dir/exported.txt")" -eq 0

# Each installed header compiles alone (C ones as C too): none needs another
# included first, and none reaches a header that is not installed.
for header in "$prefix"/include/mt/*; do
  name=mt/$(basename "$header")
  echo "#include \"$name\"" | c++ -std=c++20 -fsyntax-only -I "$prefix/include" -x c++ - 2> "$dir/header.err"
  check "$name compiles alone as C++" test $? -eq 0
  case $name in
    *.h) echo "#include \"$name\"" | cc -std=c11 -fsyntax-only -I "$prefix/include" -x c - 2> "$dir/header.err"
         check "$name compiles alone as C" test $? -eq 0 ;;
  esac
done
check "the kernels' header is not installed" test ! -e "$prefix/include/mt/kernels.h"

cmake -S "$src/examples" -B "$dir/examples" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  > "$dir/examples-configure.log" 2>&1
check "the examples configure with find_package(libmt)" test $? -eq 0
cmake --build "$dir/examples" -j2 > "$dir/examples-build.log" 2>&1
check "the examples build against the installed package" test $? -eq 0
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
cc -std=c11 -Wall -o "$dir/translate_pc" "$src/examples/translate.c" $(pkg-config --cflags --libs libmt) \
  -Wl,-rpath,"$prefix/lib" > "$dir/pkg-config-build.log" 2>&1
check "the C example builds with pkg-config" test $? -eq 0

model=$src/models/en-de-tiny.int8.mtm
sentence="A man in a blue shirt is standing on a ladder."
expected=$(echo "$sentence" | "$build/tools/mt_translate" -m "$model")
for program in "$dir/examples/translate_c" "$dir/examples/translate_cpp" "$dir/examples/translate_cpp_static" \
               "$dir/translate_pc"; do
  got=$("$program" "$model" "$sentence" 2> "$dir/err.txt")
  check "$(basename "$program") translates as mt_translate does" test "$got" = "$expected" -a -n "$got"
done
check "the shared-library examples load the installed libmt.so" \
  grep -q "$prefix/lib/libmt.so" <(ldd "$dir/examples/translate_c")
"$dir/examples/translate_c" "$src/models/missing.mtm" "x" > /dev/null 2> "$dir/err.txt"
check "the C example reports a missing model" grep -q "cannot open" "$dir/err.txt"

# Added by another project (add_subdirectory): libmt alone, no tests,
# benchmarks, trainer or tools (PROJECT_IS_TOP_LEVEL). Configured only.
mkdir -p "$dir/super"
cat > "$dir/super/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.25)
project(super CXX)
add_subdirectory("$src" libmt)
add_executable(app "$src/examples/translate.cpp")
target_link_libraries(app PRIVATE mt)
EOF
cmake -S "$dir/super" -B "$dir/super/build" -DMT_CUDA=OFF > "$dir/super-configure.log" 2>&1
check "a project that adds libmt configures" test $? -eq 0
cmake --build "$dir/super/build" --target help > "$dir/super-targets.txt" 2>&1
check "a subproject libmt gives the library and the project's own targets" \
  test -n "$(grep -x '... app' "$dir/super-targets.txt")" -a -n "$(grep -x '... mt' "$dir/super-targets.txt")"
check "a subproject libmt builds no tests, benchmarks, trainer or tools" \
  test -z "$(grep -E '^\.\.\. (test_|bench_|mt_train|mt_translate)' "$dir/super-targets.txt")"

echo "$failures failure(s)"
test "$failures" -eq 0
