#!/bin/bash
# One call on a lent GPU machine: the CUDA tests, compute-sanitizer over the
# kernel and runtime tests, and the CUDA benchmarks, each section's log in
# LOG_DIR. The binaries are built beforehand (where the project's packages
# are; the GPU machine may lack them) and copied with their shared libraries:
#   cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release -DMT_CUDA=ON \
#         -DCMAKE_CUDA_ARCHITECTURES=90 -DMT_BUILD_SHARED=OFF
#   cmake --build build-cuda -j2 --target test_cuda_kernels test_cuda_runtime \
#         test_cuda_trainer bench_cuda_translate bench_cuda_train_step mt_translate mt_train
#   tests/cuda/gpu_session.sh --stage build-cuda .gpu      # here: binaries + libraries into .gpu/
#   tests/cuda/gpu_session.sh .gpu LOG_DIR [SECTIONS]      # there, from the repository root
# SECTIONS (default "tests train sanitize bench"): any of tests, train,
# sanitize, bench. Exit status: the first failing of the tests (run_on_gpu.sh)
# and the train section; the others only log.
set -u
if [ "${1:-}" = "--stage" ]; then
  build=$2 stage=$3
  mkdir -p "$stage/tests" "$stage/bench" "$stage/tools" "$stage/lib"
  for t in test_cuda_kernels test_cuda_runtime test_cuda_trainer; do cp "$build/tests/$t" "$stage/tests/"; done
  for b in bench_cuda_translate bench_cuda_train_step; do cp "$build/bench/$b" "$stage/bench/"; done
  cp "$build/tools/mt_translate" "$build/tools/mt_train" "$stage/tools/"
  # The Debian libraries the GPU machine's image may not have (mt_train links
  # Open MPI's; a process no launcher started never initialises it).
  for bin in "$stage"/tests/* "$stage"/bench/* "$stage"/tools/*; do
    ldd "$bin" | awk '/=> \//{print $3}' | grep -E 'sentencepiece|benchmark|protobuf|flatbuffers|libmpi|open-pal|open-rte|hwloc|libevent|libudev' || true
  done | sort -u | xargs -r -I{} cp -L {} "$stage/lib/"
  strip "$stage"/tests/* "$stage"/bench/* "$stage"/tools/* 2>/dev/null
  du -sh "$stage"
  exit 0
fi
stage=${1:?usage: gpu_session.sh STAGE LOG_DIR [SECTIONS]}
logs=${2:?usage: gpu_session.sh STAGE LOG_DIR [SECTIONS]}
sections=${3:-tests train sanitize bench}
mkdir -p "$logs"
export LD_LIBRARY_PATH="$PWD/$stage/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export MT_SOURCE_DIR="$PWD"
log() { echo "== $(date +%T) $*"; }

log "machine"
# The NCCL case of test_cuda_trainer needs a libnccl.so.2 (344 MB: too big to
# stage). The image's Python has PyPI's nvidia-nccl-cu13; else one walk of the
# file system looks for any. One found must work: MT_REQUIRE_NCCL turns the
# case's skip into a failure.
found=$(find / \( -path /proc -o -path /sys \) -prune -o \( -name 'libcublas.so.12*' -o -name 'libnccl.so.2' \) -print 2>/dev/null)
nccl=$(python3 -c 'import nvidia.nccl as n, os; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
[ -f "$nccl" ] || nccl=$(grep -m1 'libnccl.so.2$' <<< "$found")
[ -z "${MT_NCCL_LIBRARY:-}" ] && [ -n "$nccl" ] && export MT_NCCL_LIBRARY=$nccl
[ -n "${MT_NCCL_LIBRARY:-}" ] && export MT_REQUIRE_NCCL=1
{ nvidia-smi; nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.mem --format=csv
  uname -r; nproc; ls /usr/local/cuda*/lib64/libcublas.so* 2>&1
  grep 'libcublas' <<< "$found" | head -3
  echo "NCCL: ${MT_NCCL_LIBRARY:-none found}"; } > "$logs/machine.log" 2>&1
head -20 "$logs/machine.log"

status=0
if [[ " $sections " == *" tests "* ]]; then
  log "tests (run_on_gpu.sh)"
  tests/cuda/run_on_gpu.sh "$stage/tests/test_cuda_kernels" > "$logs/tests.log" 2>&1; s1=$?
  tests/cuda/run_on_gpu.sh "$stage/tests/test_cuda_runtime" >> "$logs/tests.log" 2>&1; s2=$?
  tests/cuda/run_on_gpu.sh "$stage/tests/test_cuda_trainer" >> "$logs/tests.log" 2>&1; s3=$?
  grep -E "^(All tests passed|test cases:)|exit status|FAILED|REQUIRE|CHECK|with expansion" "$logs/tests.log" | head -60
  for s in $s1 $s2 $s3; do [ "$s" -ne 0 ] && [ $status -eq 0 ] && status=$s; done
fi
if [[ " $sections " == *" train "* ]]; then
  # mt_train as a user runs it on the GPU: the shipped en-de-tiny fine-tuned
  # for 20 updates on the 40 pinned sentences, beside the same run on the CPU
  # (every logged dev loss within 0.002, else a failure), then translated on
  # the GPU (the count of lines as the CPU's is logged, not required).
  log "mt_train --device cuda and cpu (fine-tune 20 updates), mt_translate --device cuda"
  src=tests/data/shipped_sentences.en ref=tests/data/shipped_sentences.de-tiny-fp32-greedy
  for dev in cuda cpu; do
    rm -rf "/tmp/finetune-$dev"
    timeout 180 "$stage/tools/mt_train" --init models/en-de-tiny.mtm --train-src $src --train-tgt $ref \
      --dev-src $src --dev-ref $ref --out "/tmp/finetune-$dev" --max-steps 20 --max-tokens 300 \
      --log-every 5 --threads 8 --device "$dev" > "$logs/train-$dev.log" 2>&1
    s=$?
    echo "mt_train --device $dev: exit $s"; grep -E "step|loss|device|BLEU" "$logs/train-$dev.log" | head -12
    [ $s -ne 0 ] && [ $status -eq 0 ] && status=$s
  done
  losses() { grep -o 'dev loss [0-9.]*' "$logs/train-$1.log" | awk '{print $3}'; }
  if paste <(losses cuda) <(losses cpu) | awk 'NF != 2 || $1 - $2 > 0.002 || $2 - $1 > 0.002 { bad = 1 } END { exit bad || NR < 2 }'; then
    echo "dev losses: the GPU's equal the CPU's within 0.002 at each of $(losses cpu | wc -l) evaluations"
  else
    echo "dev losses differ between the GPU and the CPU runs:"; paste <(losses cuda) <(losses cpu)
    [ $status -eq 0 ] && status=3
  fi
  "$stage/tools/mt_translate" --device cuda -m /tmp/finetune-cuda/model_last.mtm < $src > "$logs/finetuned-cuda.de" 2> "$logs/translate.err"
  s=$?
  "$stage/tools/mt_translate" -m /tmp/finetune-cuda/model_last.mtm < $src > "$logs/finetuned-cpu.de" 2>> "$logs/translate.err"
  echo "mt_translate --device cuda: exit $s, $(paste -d'\t' "$logs/finetuned-cuda.de" "$logs/finetuned-cpu.de" | awk -F'\t' '$1 == $2' | wc -l) of $(wc -l < $src) lines as the CPU's"
  [ $s -ne 0 ] && [ $status -eq 0 ] && status=$s
fi
if [[ " $sections " == *" sanitize "* ]]; then
  # racecheck over the runtime test (thousands of launches) would outlast a call.
  # memcheck slows the runtime test about 50-fold: it gets the longest limit.
  for run in "memcheck test_cuda_kernels 150" "memcheck test_cuda_runtime 270" "racecheck test_cuda_kernels 150"; do
    set -- $run; tool=$1 t=$2 limit=$3
    log "compute-sanitizer $tool $t"
    {
      timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 9 "$stage/tests/$t" --durations yes \
        > "$logs/$tool-$t.log" 2>&1
      echo "$tool $t: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/$tool-$t.log" | tail -1)"
    }
  done
fi
if [[ " $sections " == *" bench "* ]]; then
  log "bench_cuda_translate"
  "$stage/bench/bench_cuda_translate" --benchmark_min_time=0.3 > "$logs/bench_cuda_translate.log" 2>&1
  grep -E "cuda_translate" "$logs/bench_cuda_translate.log" | awk '{print $1, $(NF-1), $NF}' | sed 's/target_tokens\/s=//' | head -80
  log "beam 4: bookkeeping on the host and on the device (device_search 0/1), longer"
  "$stage/bench/bench_cuda_translate" --benchmark_filter='beam:4/tf32:0/graphs:1/weights:0/' \
    --benchmark_min_time=2 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    > "$logs/bench_device_search.log" 2>&1
  grep -E "_median" "$logs/bench_device_search.log" | awk '{print $1, $NF}'
  log "bench_cuda_train_step"
  MT_BENCH_MIN_TIME=2 "$stage/bench/bench_cuda_train_step" > "$logs/bench_cuda_train_step.log" 2>&1
  tail -6 "$logs/bench_cuda_train_step.log"
fi
log "done, tests exit $status"
exit $status
