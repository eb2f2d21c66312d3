#!/usr/bin/env bash
# Two mt_train runs epoch by epoch: the mean difference (A - B) in greedy dev
# BLEU and in dev loss over the epochs both ran from FIRST to LAST, read from
# their dev.tsv (mt_train writes one row per epoch's evaluation). Epochs are
# the same training text whatever the batch size, so this compares equal data.
#   bench/dev_by_epoch.sh RUN_A RUN_B [FIRST [LAST]]     (defaults: 1, the last shared)
# RUN_A, RUN_B: run directories (or bench/results/ copies) holding dev.tsv.
set -euo pipefail
[ $# -ge 2 ] && [ $# -le 4 ] || { echo "usage: bench/dev_by_epoch.sh RUN_A RUN_B [FIRST [LAST]]" >&2; exit 2; }
for run in "$1" "$2"; do
  [ -f "$run/dev.tsv" ] || { echo "dev_by_epoch.sh: no $run/dev.tsv" >&2; exit 1; }
done
first=${3:-1} last=${4:-1000000}
[[ "$first" =~ ^[0-9]+$ && "$last" =~ ^[0-9]+$ ]] || { echo "dev_by_epoch.sh: FIRST and LAST are epoch numbers" >&2; exit 2; }
# columns of dev.tsv: step epoch dev_loss dev_ppl dev_bleu dev_chrf elapsed_s
column_of() { awk -v c="$2" 'NR > 1 { print $2, $c }' "$1/dev.tsv" | sort -k1,1; }
for column in 5 3; do
  join <(column_of "$1" $column) <(column_of "$2" $column) | sort -n -k1,1 |
    awk -v a="$first" -v b="$last" -v c=$column '$1 >= a && $1 <= b { d += $2 - $3; n++; lo = lo ? lo : $1; hi = $1 }
      END { if (!n) { print "dev_by_epoch.sh: no shared epochs in that range" > "/dev/stderr"; exit 1 }
            printf "%s %+.3f over epochs %d-%d (%d)\n", c == 5 ? "dev BLEU" : "dev loss", d / n, lo, hi, n }'
done
