#!/usr/bin/env bash
# Idempotent set-up of the Hugging Face reference trainer's Python environment (.tools/hf-venv) from the
# pinned trainers/hf/requirements.txt. Not part of the demo's set-up: PyTorch from PyPI is about 5 GB.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.tools/hf-venv
req=trainers/hf/requirements.txt
stamp="$venv/.whale-hf-stamp"
want="$(sha256sum "$req" | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$venv/bin/python" -c 'import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ("torch", "transformers", "peft")))' 2>/dev/null; then
  echo "[setup-hf] $venv up to date"
  exit 0
fi
py="${WHALE_PYTHON:-python3}"
"$py" -c 'import sys; assert sys.version_info >= (3, 10), sys.version' 2>/dev/null \
  || { echo "[setup-hf] needs Python >= 3.10 (set WHALE_PYTHON to one)" >&2; exit 1; }
started=$(date +%s)
if ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
  echo "[setup-hf] creating $venv (PyTorch is about 5 GB; a few minutes)..."
  rm -rf "$venv"
  "$py" -m venv "$venv"
fi
echo "[setup-hf] installing $req into $venv..."
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
"$venv/bin/python" -c 'import torch, transformers, peft; print(f"[setup-hf] torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}")'
echo "$want" > "$stamp"
echo "[setup-hf] done in $(( $(date +%s) - started )) s"
