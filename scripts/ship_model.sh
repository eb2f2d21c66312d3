#!/usr/bin/env bash
# Replaces a shipped model with a newly trained fp32 one and redoes what is
# derived from it: the int8 file (scripts/quantize_models.sh: method chosen on
# dev, test scores printed), for en-de the word-alignment layer (the decoder
# layer test_alignments finds best on val, stored in both files' metadata),
# and the pinned greedy translations of tests/data/shipped_sentences.en.
# Then runs the release test suite and lists what else describes the model.
# Needs ../shared/data. Run on the model already shipped, it leaves the fp32
# file and the pins as they are; the int8 file comes out the same only on
# the kind of CPU that made it (calibration runs the fp32 kernels, whose
# sums each ISA orders its own way): models/README.md.
#   scripts/ship_model.sh en-de|en-zh MODEL.mtm
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/ship_model.sh en-de|en-zh MODEL.mtm" >&2; exit 2; }
[ $# -eq 2 ] || usage
pair=$1 model=$2
case $pair in
  en-de) name=en-de-tiny pin=de-tiny ;;
  en-zh) name=en-zh-tiny pin=zh-tiny ;;
  *) usage ;;
esac
[ -f "$model" ] || { echo "ship_model.sh: no file $model" >&2; exit 1; }

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j2 > /dev/null  # everything: the test suite runs at the end
build/tools/mt_model check "$model" > /dev/null || { echo "ship_model.sh: $model does not load" >&2; exit 1; }
if ! [ "$model" -ef "models/$name.mtm" ]; then cp "$model" "models/$name.mtm"; fi
./scripts/quantize_models.sh "$pair"

if [ "$pair" = en-de ]; then
  # The layer val prefers ("int8 decoder layer L on val: A% of N words"),
  # stored in both files; the test then checks it and reports test's figure.
  layers=$(build/tests/test_alignments "Multi30k*" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' |
    grep -o 'int8 decoder layer [0-9]* on val: [0-9.]*' || true)
  [ -n "$layers" ] || { echo "ship_model.sh: test_alignments measured no layer" >&2; exit 1; }
  echo "$layers"
  layer=$(echo "$layers" | sort -t: -k2 -g | tail -1 | awk '{print $4}')
  for f in "models/$name.mtm" "models/$name.int8.mtm"; do
    build/tools/mt_model set "$f" "alignment_layer=$layer" -o "$f.tmp" > /dev/null
    mv "$f.tmp" "$f"
  done
  echo "== alignment_layer=$layer"
fi

for kind in fp32 int8; do
  file=models/$name.mtm
  [ $kind = int8 ] && file=models/$name.int8.mtm
  build/tools/mt_translate --model "$file" --beam 1 --max-length-ratio 2 --max-length-offset 10 \
    < tests/data/shipped_sentences.en > "tests/data/shipped_sentences.$pin-$kind-greedy"
done

ctest --test-dir build --output-on-failure -j2 || echo "ship_model.sh: tests failed (above)"
git status --short models tests/data
echo "Also update what describes the model: models/$name.md, docs/shipped-models.md, docs/quantization.md,"
echo "README.md's figures; for en-de docs/alignments.md, docs/shortlist.md (bench/shortlist_quality.sh),"
echo "docs/forced-decoding.md and docs/html.md's examples."
