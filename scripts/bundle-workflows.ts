// Builds the pre-built workflow bundle (.data/workflow-bundle/<hash>.js) when the workflow sources' hash
// has none yet; run by scripts/setup.sh. Prints the hash (the Worker Versioning build id) and the path.
// Usage: node --import tsx scripts/bundle-workflows.ts
import * as path from 'node:path';
import { buildWorkflowBundle } from '../workers/workflow-bundle';

buildWorkflowBundle().then((b) => {
  const rel = path.relative(path.resolve(__dirname, '..'), b.codePath);
  process.stdout.write(b.built
    ? `[setup] workflow bundle ${b.hash} built in ${(b.ms / 1000).toFixed(1)} s: ${rel}\n`
    : `[setup] workflow bundle ${b.hash} up to date: ${rel}\n`);
}, (err: Error) => {
  process.stderr.write(`[setup] workflow bundle failed: ${err.message}\n`);
  process.exit(1);
});
