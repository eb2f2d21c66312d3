#!/usr/bin/env bash
# The Python package as a user gets it: `python -m build` makes the sdist and
# then the wheel from that sdist (so the sdist is shown to build on its own),
# the wheel is installed with --no-index into a fresh venv (Debian's pytest
# and numpy through --system-site-packages: the package itself needs
# neither), and python/tests runs there against the installed package, with
# mt_translate from BUILD_DIR for the byte-for-byte comparisons, and Ray Data
# from PyPI (python/ray-requirements.txt) for libmt.ray's tests.
#   scripts/test_python.sh [BUILD_DIR]    (default: build, as scripts/test.sh leaves it)
# pip fetches scikit-build-core and pybind11 from PyPI into the build's own
# environment (pyproject.toml's build-system.requires).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
python=${PYTHON:-/usr/bin/python3}  # Debian's: its pytest and numpy come from apt
work=${MT_PYTHON_WORK:-build-python}
rm -rf "$work"
mkdir -p "$work"

echo "== python: sdist and wheel (python -m build)"
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} "$python" -m build --outdir "$work/dist" . \
  > "$work/build.log" 2>&1 || { tail -50 "$work/build.log"; echo "test_python: python -m build failed"; exit 1; }
ls -l "$work/dist"
sdist=$(ls "$work"/dist/libmt-*.tar.gz)
wheel=$(ls "$work"/dist/libmt-*.whl)
# The sdist holds the library's sources and not the test data or models.
tar tzf "$sdist" > "$work/sdist.txt"
grep -q "/lib/src/session/session.cpp$" "$work/sdist.txt" || { echo "test_python: the sdist lacks lib/src"; exit 1; }
if grep -qE "/(models|tests|bench)/" "$work/sdist.txt"; then
  echo "test_python: the sdist carries models/, tests/ or bench/"; exit 1
fi

echo "== python: install the wheel into a fresh venv (--no-index)"
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --no-index --no-deps "$wheel" > "$work/install.log" 2>&1 \
  || { cat "$work/install.log"; exit 1; }
# Ray Data from PyPI for libmt.ray's tests (pinned; counted in CI's time).
echo "== python: Ray Data from PyPI (python/ray-requirements.txt)"
start=$SECONDS
"$work/venv/bin/pip" install -r python/ray-requirements.txt > "$work/ray-install.log" 2>&1 \
  || { tail -30 "$work/ray-install.log"; echo "test_python: pip could not install Ray (network? PyPI?)"; exit 1; }
echo "installed in $((SECONDS - start)) s"

echo "== python: pytest python/tests against the installed package"
# Run from python/tests so that `import libmt` finds the installed package,
# never the source folder.
mt_translate=$PWD/$build_dir/tools/mt_translate
set +e
(cd python/tests && MT_TRANSLATE=$mt_translate MT_REQUIRE_MT_TRANSLATE=1 MT_REQUIRE_RAY=1 \
   "../../$work/venv/bin/python" -m pytest -q -rs -p no:cacheprovider .)
rc=$?
set -e
# pytest exits 5 when it collected no test: a broken suite, not a pass.
if [ $rc = 5 ]; then echo "test_python: pytest collected no tests"; exit 1; fi
exit $rc
