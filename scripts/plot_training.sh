#!/usr/bin/env bash
# Turns an mt_train run's logs (DIR/train.tsv, DIR/dev.tsv) into DIR/training.png:
# training loss and dev loss against updates, and dev BLEU on a second axis.
# Needs gnuplot (apt-get install gnuplot-nox).
set -euo pipefail
dir=${1:?usage: plot_training.sh RUN_DIR}
command -v gnuplot > /dev/null || { echo "plot_training.sh: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 1; }
[ -s "$dir/train.tsv" ] || { echo "plot_training.sh: no $dir/train.tsv" >&2; exit 1; }
gnuplot <<GP
set terminal pngcairo size 1000,600
set output "$dir/training.png"
set datafile separator "\t"
set key autotitle columnhead
set xlabel "updates"
set ylabel "loss (per token)"
set y2label "dev BLEU"
set y2tics
set ytics nomirror
set grid
plot "$dir/train.tsv" using 1:3 with lines title "train loss", \
     "$dir/dev.tsv" using 1:3 with linespoints title "dev loss", \
     "$dir/dev.tsv" using 1:5 axes x1y2 with linespoints title "dev BLEU"
GP
echo "wrote $dir/training.png"
