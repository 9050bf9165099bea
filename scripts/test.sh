#!/usr/bin/env bash
# The whole test suite: set-up (idempotent), lint and type-check side by side, then every tests/**/*.test.ts,
# each under its own `node --test`, in two groups: a serial group (one file at a time: tests that assert wall
# or CPU time) and a concurrent group (several files at a time, longest first; most wait on processes). Each
# file's output shows when it ends, with its time; the closing lines are the totals over every file
# ("# pass N" / "# fail N"), and the exit status is non-zero when lint, the type-check or any file failed.
#   bash scripts/test.sh                          # the suite (what `npm test` and CI run)
#   bash scripts/test.sh --list                   # the two groups, in start order; nothing runs
#   bash scripts/test.sh --group concurrent       # set-up, then one group only (serial|concurrent), no lint
set -euo pipefail
cd "$(dirname "$0")/.."
only=""
case "${1:-}" in
  "" | --list) ;;
  --group) only="${2:-}"; [ "$only" = serial ] || [ "$only" = concurrent ] || { echo "--group takes serial or concurrent, got '${only}'" >&2; exit 2; } ;;
  *) echo "unknown argument '$1': use --list or --group serial|concurrent (no argument: the whole suite)" >&2; exit 2 ;;
esac

mapfile -t files < <(find tests -name '*.test.ts' -not -path '*/node_modules/*' | sort)
if [ "${#files[@]}" -eq 0 ]; then echo "no test files found" >&2; exit 1; fi

# Serial group: the sandbox's wall-time, CPU-time and memory limits and a worker's stop time after SIGTERM
# are asserted in seconds, so these run alone. (The model tests' "timers keep firing" checks ask for 5 ticks
# and their kills wait for a step to begin: they hold under load and run in the concurrent group.)
SERIAL_PREFIXES=(tests/sandbox/ tests/faults/graceful-shutdown.test.ts)
# Concurrent group, started longest first so that no long file starts last (by their wall time in a clean-clone
# CI run on a 2-core machine; files not named here follow in path order). Every file of this group has its own dev
# server or none, ports the OS says are free, its own temp folders, and workflow ids on its own server only,
# so files do not meet. (The reduced soak and the server-loss test share one reference run through a lock.)
LONGEST_FIRST=(
  tests/hf/e2e-run.test.ts tests/docs/doc-commands.test.ts tests/product/gc.test.ts
  tests/bench/compare-stale-workers.test.ts tests/track/mlflow.test.ts tests/product/concurrent-runs.test.ts
  tests/hf/trainer.test.ts tests/product/agent-bundle.test.ts tests/scale/multi-worker.test.ts
  tests/faults/soak-reduced.test.ts tests/faults/fine-tune-kill.test.ts tests/scale/served-run.test.ts
  tests/audit/web-ui.test.ts tests/product/external-domain.test.ts tests/hf/transformers-serve.test.ts
  tests/faults/server-loss.test.ts tests/model/gradients.test.ts tests/bench/compare.test.ts
  tests/cli/worker-command.test.ts tests/cli/bad-input.test.ts tests/workflows/budget-protocol.test.ts
  tests/cli/namespace-json.test.ts
)
CONCURRENCY="${WHALE_TEST_CONCURRENCY:-3}"

serial=(); rest=()
for f in "${files[@]}"; do
  s=0
  for p in "${SERIAL_PREFIXES[@]}"; do [[ "$f" == "$p"* ]] && s=1; done
  if [ "$s" -eq 1 ]; then serial+=("$f"); else rest+=("$f"); fi
done
concurrent=()
for f in "${LONGEST_FIRST[@]}"; do
  for r in "${rest[@]}"; do [ "$r" = "$f" ] && concurrent+=("$f"); done
done
for r in "${rest[@]}"; do
  named=0
  for f in "${LONGEST_FIRST[@]}"; do [ "$r" = "$f" ] && named=1; done
  [ "$named" -eq 0 ] && concurrent+=("$r")
done
summary="${#files[@]} test files: ${#serial[@]} in the serial group, ${#concurrent[@]} in the concurrent group ($CONCURRENCY at a time)"
if [ "${1:-}" = "--list" ]; then
  # The grouping only (nothing is set up or run): the serial group, then the concurrent group in start order.
  echo "$summary"; printf 'serial      %s\n' "${serial[@]}"; printf 'concurrent  %s\n' "${concurrent[@]}"; exit 0
fi

bash scripts/setup.sh
# Test path only (not the demo's set-up): the Hugging Face reference trainer's venv (PyTorch, transformers,
# peft) and the MLflow tracking server for the experiment-tracking test. Both idempotent; a failure stops here.
bash scripts/setup-hf.sh
bash scripts/setup-mlflow.sh
export PATH="$PWD/.tools/bin:$PATH"
export TEMPORAL_CLI_PATH="$PWD/.tools/bin/temporal"
# The audit report's browser test needs Debian's chromium (CI runs as root; skipped when it is present).
if [ ! -x /usr/bin/chromium ] && [ -z "${CHROMIUM_PATH:-}" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "[setup] installing Debian's chromium for the report test (once)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "[setup] could not install chromium; the browser test will say so" >&2
  else
    echo "[setup] chromium missing and not root: install Debian's chromium or set CHROMIUM_PATH for the report test" >&2
  fi
fi

logs="$(mktemp -d "${TMPDIR:-/tmp}/whale-test-XXXXXX")"
# On the way out (also when interrupted): the test files still running, with their runners, then the logs.
cleanup() { local p; for p in $(jobs -p); do pkill -TERM -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done; rm -rf "$logs"; }
trap cleanup EXIT
t0=$SECONDS
echo "[test] $summary"

# Lint and type-check are each one process on one core: side by side they take the longer one's time.
if [ -z "$only" ]; then
  echo "[test] lint and typecheck (side by side)"
  npx eslint . >"$logs/lint.txt" 2>&1 & lint_pid=$!
  npx tsc -p tsconfig.json --noEmit >"$logs/tsc.txt" 2>&1 & tsc_pid=$!
  lint_status=0; wait "$lint_pid" || lint_status=$?
  tsc_status=0; wait "$tsc_pid" || tsc_status=$?
  grep -v 'npm warn' "$logs/lint.txt" || true
  grep -v 'npm warn' "$logs/tsc.txt" || true
  echo "[test] lint exit $lint_status, typecheck exit $tsc_status ($((SECONDS - t0)) s)"
  if [ "$lint_status" -ne 0 ] || [ "$tsc_status" -ne 0 ]; then echo "[test] lint or typecheck failed" >&2; exit 1; fi
fi

# A count from a file's closing lines ("ℹ pass 12"): the last such line of its output, 0 when there is none.
count() { local v; v=$(grep -E "^ℹ $1 [0-9]+$" "$2" | tail -n 1 | cut -d' ' -f3); echo "${v:-0}"; }

# Runs a group's files, at most N at a time, each under its own `node --test` (node's runner would sort the
# files by path; this keeps the start order). A file's output is shown whole when it ends, with its time.
status=0
failed=()
run_group() {
  local name=$1 n=$2; shift 2
  local started=$SECONDS i=0 k
  local -a pending=()
  echo "[test] $name group: $# files, $n at a time"
  show_done() {
    local rest=() j code secs
    for j in "${pending[@]}"; do
      if [ -f "$logs/$name-$j.rc" ]; then
        read -r code secs cpu <"$logs/$name-$j.rc"
        # The file's own closing counts are folded into one line (the totals at the end add them up).
        grep -v -E '^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [0-9.]+$' "$logs/$name-$j.txt" || true
        echo "[test] ${secs} s (cpu ${cpu:-?} s), exit ${code}, pass $(count pass "$logs/$name-$j.txt"), fail $(count fail "$logs/$name-$j.txt"): ${group_files[$j]}"
        if [ "$code" -ne 0 ]; then status=1; failed+=("${group_files[$j]}"); fi
      else
        rest+=("$j")
      fi
    done
    pending=("${rest[@]}")
  }
  group_files=("$@")
  for k in "${!group_files[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$n" ]; do wait -n || true; show_done; done
    (
      s=$SECONDS; code=0
      node --import tsx --test --test-reporter=spec "${group_files[$k]}" >"$logs/$name-$k.txt" 2>&1 || code=$?
      # CPU seconds of the file and every process it waited for (user + system): what the 2 cores paid for it.
      times >"$logs/$name-$k.times" # a builtin with a redirect: no subshell, so its children's line counts
      cpu=$(tail -n 1 "$logs/$name-$k.times" | awk '{ split($1, u, /[ms]/); split($2, y, /[ms]/); printf "%.0f", u[1] * 60 + u[2] + y[1] * 60 + y[2] }')
      echo "$code $((SECONDS - s)) $cpu" >"$logs/$name-$k.rc"
    ) &
    pending+=("$k")
    i=$((i + 1))
  done
  while [ "${#pending[@]}" -gt 0 ]; do
    wait -n || true
    show_done
    # A file whose runner ended without leaving its status (killed): a failure, said as such.
    if [ "${#pending[@]}" -gt 0 ] && [ -z "$(jobs -rp)" ]; then
      for k in "${pending[@]}"; do [ -f "$logs/$name-$k.rc" ] || echo "1 ?" >"$logs/$name-$k.rc"; done
      show_done
    fi
  done
  echo "[test] $name group: $i files in $((SECONDS - started)) s"
}
if [ "${#serial[@]}" -gt 0 ] && [ "$only" != concurrent ]; then run_group serial 1 "${serial[@]}"; fi
if [ "${#concurrent[@]}" -gt 0 ] && [ "$only" != serial ]; then run_group concurrent "$CONCURRENCY" "${concurrent[@]}"; fi

# The totals over every file: the sum of each file's closing "ℹ <key> N" line (the last one in its output).
total() {
  local s=0 f
  for f in "$logs"/serial-*.txt "$logs"/concurrent-*.txt; do
    [ -f "$f" ] && s=$((s + $(count "$1" "$f")))
  done
  echo "$s"
}
if [ -z "$only" ]; then echo "[test] totals over both groups, lint and typecheck included: $((SECONDS - t0)) s"
else echo "[test] totals over the $only group (no lint or typecheck): $((SECONDS - t0)) s"; fi
for k in tests suites pass fail cancelled skipped todo; do echo "ℹ $k $(total "$k")"; done
pass=$(total pass); fail=$(total fail); cancelled=$(total cancelled)
# A file whose runner failed without a failing test (e.g. a file that does not load) still fails the suite.
if [ "$fail" -gt 0 ] || [ "$cancelled" -gt 0 ]; then status=1; fi
if [ "${#failed[@]}" -gt 0 ]; then
  # Each failing file's closing report again (node's "failing tests:" section, with the errors), so that the
  # end of the log, which is what a CI summary keeps, says why and not only which.
  for f in "${failed[@]}"; do
    for log in "$logs"/serial-*.txt "$logs"/concurrent-*.txt; do
      [ -f "$log" ] || continue
      k=$(basename "$log" .txt); grp=${k%%-*}; idx=${k#*-}
      [ "$grp" = serial ] && files_of=("${serial[@]}") || files_of=("${concurrent[@]}")
      [ "${files_of[$idx]}" = "$f" ] || continue
      echo "[test] why $f failed (the end of its report):"
      if grep -q '^✖ failing tests:' "$log"; then sed -n '/^✖ failing tests:/,$p' "$log" | grep -v -E '^ℹ ' | head -n 120
      else tail -n 60 "$log"; fi
    done
  done
  printf '[test] failed: %s\n' "${failed[@]}"
fi
echo "# pass $pass"
echo "# fail $fail"
exit "$status"
