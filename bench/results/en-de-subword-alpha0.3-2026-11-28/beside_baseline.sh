#!/usr/bin/env bash
# Greedy dev BLEU of this run at each evaluation beside the no-sampling run's
# evaluation nearest in updates (run from the repository's root):
#   bench/results/en-de-subword-alpha0.3-2026-11-28/beside_baseline.sh > .../beside_baseline.txt
set -euo pipefail
here=bench/results/en-de-subword-alpha0.3-2026-11-28
awk -F'\t' 'NR==FNR { if (FNR>1) { s[FNR]=$1; b[FNR]=$5; n=FNR } next }
 FNR>1 { best=0; bd=1e9; for (i=2;i<=n;i++){ d=s[i]-$1; if (d<0) d=-d; if (d<bd){bd=d; best=i} }
         printf "%5d ep %2d: sampled %6.2f  baseline(%5d) %6.2f  diff %+6.2f\n", $1, $2, $5, s[best], b[best], $5-b[best] }' \
  bench/results/en-de-tiny-zen3-2026-11-28/dev.tsv "$here/dev.tsv"
