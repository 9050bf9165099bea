#!/usr/bin/env bash
# The whole test suite: set-up (idempotent), lint, type-check, then every tests/**/*.test.ts under
# node's test runner (its closing lines "# pass N" / "# fail N" are what CI reads).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.tools/bin:$PATH"
export TEMPORAL_CLI_PATH="$PWD/.tools/bin/temporal"
echo "[test] lint"; npx eslint .
echo "[test] typecheck"; npx tsc -p tsconfig.json --noEmit
mapfile -t files < <(find tests -name '*.test.ts' -not -path '*/node_modules/*' | sort)
if [ "${#files[@]}" -eq 0 ]; then echo "no test files found" >&2; exit 1; fi
echo "[test] ${#files[@]} test files"
exec node --import tsx --test --test-reporter=spec --test-concurrency=1 "${files[@]}"
