#!/usr/bin/env bash
# Runs the libFuzzer targets of build-fuzz (make fuzz-build) one after the other.
#   scripts/fuzz.sh SECONDS [TARGET...]     fuzz each target for SECONDS (default: all targets)
#   scripts/fuzz.sh --smoke [TARGET...]     run each target over its seed corpus, then 2000
#                                           mutations: what `make test` does
# Each target keeps what it finds in build-fuzz/fuzz/corpus/<target> (new inputs) beside the
# seeds the build generated in build-fuzz/fuzz/seeds/<target>; a crash leaves its input in
# build-fuzz/fuzz/crashes/<target>/ and fails the run. The closing line of each target
# (executions, corpus size, time) goes to build-fuzz/fuzz/summary.txt.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${FUZZ_DIR:-$root/build-fuzz}/fuzz"
all_targets=(npy npz config stats plan model image)

mode="$1"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then targets=("${all_targets[@]}"); fi

# Longer inputs only slow the search (FUZZ_MAX_LEN, default 64 KiB); the unit tests replay the
# larger reproducers whole.
common=(-max_len="${FUZZ_MAX_LEN:-65536}" -rss_limit_mb=2560 -malloc_limit_mb=2048 -timeout=30 -print_final_stats=1)
status=0
for t in "${targets[@]}"; do
  exe="$dir/fuzz_$t"
  [[ -x "$exe" ]] || { echo "fuzz: $exe is not built (make fuzz-build)" >&2; exit 2; }
  corpus="$dir/corpus/$t"
  crashes="$dir/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  log="$dir/fuzz_$t.log"
  if [[ "$mode" == "--smoke" ]]; then
    run=(-runs=2000 -seed=1)
  else
    run=(-max_total_time="$mode")
  fi
  echo "fuzz: $t (${run[*]})"
  if "$exe" "${common[@]}" "${run[@]}" -artifact_prefix="$crashes/" "$corpus" "$dir/seeds/$t" >"$log" 2>&1; then
    execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)"
    size="$(find "$corpus" "$dir/seeds/$t" -type f ! -name .stamp | wc -l)"
    line="$t: ${execs:-?} executions, corpus $size inputs (${run[*]})"
    echo "fuzz: $line"
    echo "$(date -u +%FT%TZ) $line" >>"$dir/summary.txt"
  else
    echo "fuzz: $t FAILED; the log's end:" >&2
    tail -40 "$log" >&2
    status=1
  fi
done
exit $status
