#!/usr/bin/env bash
# Runs every benchmark program built in <build-dir>/benchmarks (each bench_* executable) and the
# PyTorch comparison scripts (benchmarks/torch_*.py). JSON results go to
# <build-dir>/benchmarks/results/<program>.json. bench_fashion_mnist and torch_fashion_mnist.py
# (one epoch of the demo's training, a few minutes each) read Debian's dataset-fashion-mnist and
# skip their cases without it.
#   benchmarks/run.sh build/release [Google Benchmark flags, e.g. --benchmark_filter=gemm]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:?usage: benchmarks/run.sh <build-dir> [benchmark flags...]}"
shift
bench_dir="$build/benchmarks"
results="$bench_dir/results"
mkdir -p "$results"

found=0
for program in "$bench_dir"/bench_*; do
  [[ -f "$program" && -x "$program" ]] || continue
  found=1
  name="$(basename "$program")"
  echo "== $name"
  "$program" --benchmark_out="$results/$name.json" --benchmark_out_format=json "$@"
done
if [[ "$found" == 0 ]]; then
  echo "run.sh: no bench_* programs in $bench_dir (configure with -DMIXPREC_BUILD_BENCHMARKS=ON and build)" >&2
  exit 1
fi

# Debian's python3-torch installs into the system interpreter, which need not be the first
# python3 on PATH; without torch the scripts say so and exit 0.
python=python3
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c "import torch" 2>/dev/null; then
    python="$candidate"
    break
  fi
done
for script in "$here"/torch_*.py; do
  [[ -f "$script" ]] || continue
  echo "== $(basename "$script")"
  "$python" "$script"
done
