#!/bin/sh
# The ctest "torch_check:trainer_matches_pytorch": dumps our trainer's results
# and compares them with an independent PyTorch model. Optional: when no
# interpreter can import torch, prints a skip message and exits 0.
# Usage: run.sh DUMP_TRAINER_BINARY SCRATCH_DIR
set -eu
dump=$1
scratch=$2
here=$(cd "$(dirname "$0")" && pwd)

python=
for candidate in /usr/bin/python3 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import torch" >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "MT_TEST_SKIPPED: torch not importable (tried /usr/bin/python3, python3)"
  exit 0
fi

rm -rf "$scratch"
mkdir -p "$scratch"
"$dump" "$scratch"
exec "$python" "$here/check_against_torch.py" "$scratch"
