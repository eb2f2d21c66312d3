#!/usr/bin/env bash
# mt_train data-parallel against threads, here: 1 process x 2 threads vs 2 ranks x 1 thread
# (mpirun), tiny and small, Multi30k train, the shipped model's vocabulary; twice each. docs/training.md.
set -u
cd "$(dirname "$0")/.."
build/tools/mt_model vocab extract models/en-de-tiny.mtm -o /tmp/ende.vocab.model --force > /dev/null
D=../shared/data/multi30k
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for config in tiny small; do
  steps=$([ $config = tiny ] && echo 60 || echo 24)
  A="--train-src $D/train.en --train-tgt $D/train.de --dev-src $D/val.en --dev-ref $D/val.de --vocab /tmp/ende.vocab.model --config $config --max-steps $steps --log-every $((steps/2)) --dropout 0.1"
  for run in 1 2; do
    rm -rf /tmp/mb-$config-p /tmp/mb-$config-r
    build/tools/mt_train $A --threads 2 --out /tmp/mb-$config-p 2>/dev/null
    mpirun -np 2 --oversubscribe build/tools/mt_train $A --threads 1 --out /tmp/mb-$config-r > /dev/null 2>&1
    p=$(tail -1 /tmp/mb-$config-p/train.tsv); r=$(tail -1 /tmp/mb-$config-r/train.tsv)
    echo "$config run $run: 1x2 threads: $(echo "$p" | awk -F'\t' '{printf "%.0f tok/s, %d updates in %.1f s", $7, $1, $8}')  |  2 ranks x1: $(echo "$r" | awk -F'\t' '{printf "%.0f tok/s, %d updates in %.1f s", $7, $1, $8}')"
  done
done
