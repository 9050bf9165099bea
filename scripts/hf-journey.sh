#!/usr/bin/env bash
# The user journey of docs/real-models.md ("A first run"), end to end and unattended: the math base policy
# exported as a Hugging Face folder, served by `transformers serve`, trained by the reference trainer through
# a WHALE run (trainers/hf/math-journey.json). The commands are the doc's; only the ports, the dev server's
# database and the artifact store are this script's own (WHALE_DEV_*, WHALE_ARTIFACT_DIR), so it runs beside
# another `whale dev`. Prints the wall time of each stage and the run's initial and final test mean@8.
#   bash scripts/hf-journey.sh [work dir, default .data/hf-journey]      (about 17 minutes on 2 busy cores)
set -euo pipefail
cd "$(dirname "$0")/.."
W="$(mkdir -p "${1:-.data/hf-journey}" && cd "${1:-.data/hf-journey}" && pwd)"
ID="${WHALE_JOURNEY_ID:-hf-math-journey}"
free_port() { .tools/hf-venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
t0=$(date +%s)
stage() { echo "[journey] $(( $(date +%s) - t0 )) s: $*" | tee -a "$W/timings.txt"; }
: > "$W/timings.txt"
serve_pid=''
dev_pid=''
cleanup() {
  # Ctrl-C for whale dev (it stops its workers, then the server); the server's whole process group.
  if [ -n "$dev_pid" ] && kill -0 "$dev_pid" 2>/dev/null; then kill -INT "$dev_pid"; wait "$dev_pid" 2>/dev/null || true; fi
  if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then kill -TERM -- "-$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

stage "set-up"
bash scripts/setup-hf.sh
node --import tsx scripts/bundle-workflows.ts   # as scripts/setup.sh does; the orchestration worker loads it
rm -rf "$W/math" "$W/artifacts" "$W/temporal" "$W/audit"

stage "export and pointer"
node bin/whale.js export data/base-policies/math.ckpt --format hf --out "$W/math"
cp trainers/hf/math-journey.json "$W/math-journey.json"
node bin/whale.js import "$W/math" --pointer --store "$W/artifacts" --run-config "$W/math-journey.json"

SERVE_PORT=$(free_port)
stage "transformers serve on port $SERVE_PORT"
# Its own process group (setsid), so its workers stop with it.
OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 setsid .tools/hf-venv/bin/transformers serve --host 127.0.0.1 --port "$SERVE_PORT" --device cpu > "$W/serve.log" 2>&1 &
serve_pid=$!
until curl -sf "http://127.0.0.1:$SERVE_PORT/health" > /dev/null; do
  kill -0 "$serve_pid" 2>/dev/null || { tail -20 "$W/serve.log"; echo "[journey] transformers serve exited" >&2; exit 1; }
  sleep 1
done

DEV_PORT=$(free_port)
export WHALE_DEV_PORT="$DEV_PORT" WHALE_DEV_UI_PORT="$(free_port)" WHALE_TEMPORAL_ADDRESS="127.0.0.1:$DEV_PORT" \
  WHALE_DEV_DATA_DIR="$W/temporal" WHALE_ARTIFACT_DIR="$W/artifacts"
stage "whale dev on port $DEV_PORT"
# The doc's backends file, with this script's port for the server.
sed "s|127.0.0.1:8000|127.0.0.1:$SERVE_PORT|" trainers/hf/transformers-serve-backends.json > "$W/backends.json"
WHALE_MODEL_BACKENDS="$W/backends.json" \
  node bin/whale.js dev --headless > "$W/dev.log" 2>&1 &
dev_pid=$!
until grep -q 'press Ctrl-C' "$W/dev.log"; do
  kill -0 "$dev_pid" 2>/dev/null || { tail -20 "$W/dev.log"; echo "[journey] whale dev exited" >&2; exit 1; }
  sleep 1
done

stage "run $ID"
node bin/whale.js run "$W/math-journey.json" --id "$ID" | tee "$W/summary.txt"
stage "run done"
node bin/whale.js status "$ID" --json > "$W/status.json"
node bin/whale.js audit "$ID" --out "$W/audit"
stage "audit done"
node -e '
  const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const pct = (x) => (x === null || x === undefined ? "n/a" : (100 * x).toFixed(1) + " %");
  const m = s.memo?.whaleStatus ?? {};
  console.log(`[journey] test mean@8: initial ${pct(m.initialMeanAt8)}, final ${pct(m.finalMeanAt8)}`);
' "$W/status.json" || true
