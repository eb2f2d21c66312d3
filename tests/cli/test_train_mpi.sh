#!/usr/bin/env bash
# mt_train data-parallel under mpirun, as a user runs it: two ranks train
# exactly as one process with --batch-slices 2 (the same losses and the same
# model file, byte for byte); a run moves from two ranks to one and back
# through --resume and ends where a straight run ends; a rank that is killed
# ends the whole job with Open MPI's message, not a hang.
# Usage: test_train_mpi.sh BIN_DIR SCRATCH_DIR DATA_DIR MPIEXEC
set -u
bin=$1
dir=$2
data=$3
mpiexec=$4
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
# shellcheck source=tiny_train_args.sh
. "$(dirname "$0")/tiny_train_args.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi=("$mpiexec" -np 2 --oversubscribe)
trainer_corpus "$data" "$dir"
tiny_train_args "$dir"
# The training columns of train.tsv (step, epoch, loss, ppl, lr, grad_norm), not the timings.
curve() { cut -f1-6 "$1/train.tsv"; }

"$bin/mt_train" "${args[@]}" --batch-slices 2 --max-steps 20 --out "$dir/one" 2> "$dir/one.err"
check "one process, --batch-slices 2: exit 0" test $? -eq 0
timeout 300 "${mpi[@]}" "$bin/mt_train" "${args[@]}" --max-steps 20 --out "$dir/two" > "$dir/two.out" 2> "$dir/two.err"
check "mpirun -np 2 mt_train: exit 0" test $? -eq 0
check "rank 0 says how it runs" grep -q "data-parallel, MPI, 2 ranks" "$dir/two.err"
check "and speaks alone: one 'done' line" test "$(grep -c 'mt_train: done' "$dir/two.err")" -eq 1
check "two ranks: the same losses, lr and gradient norms as one process in 2 slices" \
  cmp -s <(curve "$dir/one") <(curve "$dir/two")
check "two ranks: the same model file, byte for byte" cmp -s "$dir/one/model_last.mtm" "$dir/two/model_last.mtm"
check "and the same checkpoint" cmp -s "$dir/one/checkpoint.bin" "$dir/two/checkpoint.bin"

# 10 updates on two ranks, 10 more in one process, 10 more on two ranks again: as 30 straight.
"$bin/mt_train" "${args[@]}" --batch-slices 2 --max-steps 30 --out "$dir/straight" 2> /dev/null
timeout 300 "${mpi[@]}" "$bin/mt_train" "${args[@]}" --max-steps 10 --out "$dir/moved" > /dev/null 2>&1
"$bin/mt_train" "${args[@]}" --batch-slices 2 --max-steps 20 --out "$dir/moved" --resume 2> /dev/null
timeout 300 "${mpi[@]}" "$bin/mt_train" "${args[@]}" --max-steps 30 --out "$dir/moved" --resume > /dev/null 2>&1
check "resumed 2 ranks -> 1 process -> 2 ranks: the straight run's model" \
  cmp -s "$dir/straight/model_last.mtm" "$dir/moved/model_last.mtm"

# --vocab a libmt model's: each rank reads it itself; the same run as one process.
"$bin/mt_train" "${args[@]}" --vocab "$dir/one/model_last.mtm" --batch-slices 2 --max-steps 5 \
  --out "$dir/vocab-one" 2> /dev/null
timeout 300 "${mpi[@]}" "$bin/mt_train" "${args[@]}" --vocab "$dir/one/model_last.mtm" --max-steps 5 \
  --out "$dir/vocab-two" > /dev/null 2>&1
check "--vocab MODEL.mtm on two ranks: exit 0" test $? -eq 0
check "--vocab MODEL.mtm on two ranks: one process's model" \
  cmp -s "$dir/vocab-one/model_last.mtm" "$dir/vocab-two/model_last.mtm"

# --cooldown by the clock: rank 0's elapsed time, broadcast before every
# step, so the ranks' collectives stay paired (no hang) and the rate decays.
timeout 300 "${mpi[@]}" "$bin/mt_train" "${args[@]}" --time-budget 0.05 --cooldown 0.5 --out "$dir/cool" \
  > /dev/null 2> "$dir/cool.err"
check "--cooldown by the clock on two ranks: exit 0" test $? -eq 0
check "--cooldown by the clock on two ranks: the last logged lr below 0.9 of the schedule's" awk -F'\t' \
  'NR > 1 { s = $1; f = $5 / (3e-3 * (s < 10 ? s / 10 : sqrt(10 / s))) } END { exit !(NR > 2 && f < 0.9) }' \
  "$dir/cool/train.tsv"

# A run that diverges (a rate of 100 with full weight decay: NaN within ten
# updates): every rank stops, exit 1, rank 0 says why, nothing written.
timeout 120 "${mpi[@]}" "$bin/mt_train" "${args[@]/3e-3/100}" --weight-decay 1 --max-steps 30 --out "$dir/diverged" \
  > /dev/null 2> "$dir/diverged.err"
rc=$?
check "a diverged run on two ranks: every rank stops, exit 1 ($rc)" test $rc -eq 1
check "a diverged run on two ranks: said once" test "$(grep -c 'the run diverged' "$dir/diverged.err")" -eq 1
check "a diverged run on two ranks: no checkpoint" test ! -e "$dir/diverged/checkpoint.bin"

usage() { "${mpi[@]}" "$bin/mt_train" "$@" > /dev/null 2> "$dir/usage.err"; }
usage "${args[@]}" --max-steps 5 --out "$dir/bad" --batch-slices 3
check "--batch-slices other than the rank count: refused" grep -q "the ranks are the slices" "$dir/usage.err"
check "and said once, by rank 0" test "$(grep -c 'the ranks are the slices' "$dir/usage.err")" -eq 1

# A rank killed mid-run: the job ends (Open MPI aborts it), with a message, well before the timeout.
"${mpi[@]}" "$bin/mt_train" "${args[@]}" --max-steps 100000 --out "$dir/killed" \
  > /dev/null 2> "$dir/killed.err" &
job=$!
for _ in $(seq 1 100); do
  [ -s "$dir/killed/train.tsv" ] && [ "$(wc -l < "$dir/killed/train.tsv")" -gt 2 ] && break
  sleep 0.2
done
# A rank, not the launcher (whose command line names mt_train too): argv[0] is the binary.
victim=$(pgrep -f "^$bin/mt_train .*--out $dir/killed" | tail -1)
check "a rank of the job found" test -n "$victim"
start=$(date +%s)
kill -9 "$victim"
timeout 120 tail --pid=$job -f /dev/null
waited=$(( $(date +%s) - start ))
wait $job
rc=$?
check "a killed rank ends the job: non-zero exit ($rc)" test $rc -ne 0
check "within a minute (took ${waited} s)" test "$waited" -lt 60
check "the launcher names the rank that died" grep -qiE "signal 9|killed|exited on signal" "$dir/killed.err"
echo "$failures failed"
exit $(( failures > 0 ))
