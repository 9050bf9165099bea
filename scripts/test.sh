#!/usr/bin/env bash
# The whole test suite: set-up (idempotent), lint, type-check, then every tests/**/*.test.ts under
# node's test runner (its closing lines "# pass N" / "# fail N" are what CI reads).
set -euo pipefail
cd "$(dirname "$0")/.."
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
echo "[test] lint"; npx eslint .
echo "[test] typecheck"; npx tsc -p tsconfig.json --noEmit
mapfile -t files < <(find tests -name '*.test.ts' -not -path '*/node_modules/*' | sort)
if [ "${#files[@]}" -eq 0 ]; then echo "no test files found" >&2; exit 1; fi
echo "[test] ${#files[@]} test files"
exec node --import tsx --test --test-reporter=spec --test-concurrency=1 "${files[@]}"
