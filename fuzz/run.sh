#!/usr/bin/env bash
# Runs every fuzz target of a fuzz-preset build for a fixed time, two at a time (one per core):
#   fuzz/run.sh build/sanitize [seconds per target] [target ...]
# Seeds: fuzz_seed_corpora writes <build>/corpus/<target>/ first (the inputs libFuzzer finds
# interesting are added there). A crash, leak, hang (-timeout), memory blow-up or undocumented
# exception stops that target, leaves the reproducer in <build>/findings/<target>/ and makes the
# script exit 1 after the others ran, naming each failed target, its reproducer and its log.
# Reproduce: <build>/fuzz/fuzz_<target> <reproducer> (runs that one input).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:?usage: fuzz/run.sh <build-dir> [seconds per target] [target ...]}"
seconds="${2:-20}"
shift $(($# >= 2 ? 2 : 1))
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(policy_name policy_json policy_map model_config weights_file checkpoint_file idx_file)

"$build/fuzz/fuzz_seed_corpora" "$build/corpus"

run_target() {
  local target="$1" findings="$build/findings/$1"
  # Every target under 2 GiB (also the largest single allocation): model_config sets mixprec's
  # size caps far below it, so a config asking for more must be rejected by mixprec.
  local limits=(-rss_limit_mb=2048)
  rm -rf "$findings"
  mkdir -p "$findings"
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$build/fuzz/fuzz_$target" "$build/corpus/$target" -dict="$here/mixprec.dict" \
      -max_total_time="$seconds" -timeout=10 -detect_leaks=1 "${limits[@]}" \
      -artifact_prefix="$findings/" -print_final_stats=1 -print_funcs=0 >"$findings/log.txt" 2>&1
}

status=0
declare -A pids
for target in "${targets[@]}"; do
  [[ -x "$build/fuzz/fuzz_$target" ]] || { echo "fuzz: no $build/fuzz/fuzz_$target (build the sanitize preset)" >&2; exit 2; }
  # Two at a time: wait for one of the running targets before starting a third.
  while [[ $(jobs -rp | wc -l) -ge 2 ]]; do wait -n || true; done
  echo "fuzz: $target for ${seconds}s"
  run_target "$target" &
  pids[$target]=$!
done
for target in "${targets[@]}"; do
  findings="$build/findings/$target"
  if wait "${pids[$target]}"; then
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$findings/log.txt" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz: $target: no finding in $runs executions"
  else
    status=1
    reproducer=$(find "$findings" -type f ! -name log.txt | head -1)
    echo "fuzz: $target FAILED; reproducer: ${reproducer:-none}; log: $findings/log.txt" >&2
    grep -m1 -E '==ERROR|SUMMARY|terminate called|broken property|ALARM|out-of-memory|runtime error' "$findings/log.txt" >&2 || true
  fi
done
exit "$status"
