#!/usr/bin/env bash
# Copies to OUT the candidate model with the highest dev BLEU (beam 5, two
# threads), printing each one's score: the choice scripts/train_en_de.sh and
# scripts/train_en_zh.sh make between a run's best model and its averages.
# Ties go to the first. Needs mt_translate and mt_bleu in build/tools (or in
# $MT_TOOLS); paths are the caller's (the script does not change directory).
#   scripts/pick_by_dev_bleu.sh OUT DEV_SRC DEV_REF 13a|zh CANDIDATE.mtm...
set -euo pipefail
tools=${MT_TOOLS:-$(cd "$(dirname "$0")/.." && pwd)/build/tools}
[ $# -ge 5 ] || { echo "usage: scripts/pick_by_dev_bleu.sh OUT DEV_SRC DEV_REF 13a|zh CANDIDATE.mtm..." >&2; exit 2; }
out=$1 src=$2 ref=$3 tokenize=$4
shift 4
best= best_score=-1
for candidate in "$@"; do
  score=$("$tools/mt_translate" -m "$candidate" --beam 5 --threads 2 --batch-size 32 < "$src" |
    "$tools/mt_bleu" "$ref" --tokenize "$tokenize" --metrics bleu --score-only)
  echo "== dev, beam 5: $(basename "$candidate") $score"
  if awk -v a="$score" -v b="$best_score" 'BEGIN { exit !(a > b) }'; then best=$candidate best_score=$score; fi
done
cp "$best" "$out"
echo "== chosen: $(basename "$best") -> $out"
