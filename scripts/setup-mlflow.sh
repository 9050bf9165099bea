#!/usr/bin/env bash
# Idempotent set-up of the MLflow tracking server used by the experiment-tracking test (.tools/mlflow-venv).
# Test path only, not part of the demo's set-up: `whale track` itself needs no Python, only a server's URL.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.tools/mlflow-venv
# The full package, not mlflow-skinny: only it ships the server's web UI, which the test screenshots.
pin="mlflow==3.17.2"
stamp="$venv/.whale-mlflow-stamp"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pin" ] && [ -x "$venv/bin/mlflow" ]; then
  echo "[setup-mlflow] $venv up to date ($pin)"
  exit 0
fi
py="${WHALE_PYTHON:-python3}"
"$py" -c 'import sys; assert sys.version_info >= (3, 10), sys.version' 2>/dev/null \
  || { echo "[setup-mlflow] needs Python >= 3.10 (set WHALE_PYTHON to one)" >&2; exit 1; }
started=$(date +%s)
if ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
  echo "[setup-mlflow] creating $venv..."
  rm -rf "$venv"
  "$py" -m venv "$venv"
fi
echo "[setup-mlflow] installing $pin into $venv (a minute or two)..."
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$pin"
"$venv/bin/mlflow" --version
echo "$pin" > "$stamp"
echo "[setup-mlflow] done in $(( $(date +%s) - started )) s"
