// Lint guards the workflow sandbox: workflow code must stay deterministic and bundle-able.
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);

export default tseslint.config(
  { ignores: ['node_modules/**', '.tools/**', '.data/**', 'dist/**', '**/*.js', '**/*.mjs', 'tests/histories/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser, parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // node:test's describe/it return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }],
      }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: nodeBuiltins.map((name) => ({ name, message: 'Node built-ins are not allowed in workflow code (non-deterministic, and break the bundle).' })),
        patterns: [
          { group: ['onnxruntime-node', 'onnxruntime-node/*'], message: 'The model runtime belongs in activities, never in workflow code.' },
          { group: ['isolated-vm', '**/harness-sandbox/**', '**/model/**', '**/agent/**', '**/domains/**', '**/workers/**', '**/cli/**', '**/store/artifact-store', '**/store/artifact-store.ts'], message: 'Workflow code may only import workflow-safe modules.' },
          { group: ['@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/testing'], message: 'Only @temporalio/workflow and @temporalio/common are allowed in workflow code.' },
          { group: ['**/activities/**', '**/activities'], allowTypeImports: true, message: 'Import activities with `import type` only.' },
        ],
      }],
    },
  },
  {
    files: ['workflows/decisions/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@temporalio/*', 'zod', 'node:*', 'onnxruntime-node'], message: 'The decision module is pure: no Temporal, Node, onnx or zod imports.' }] }],
    },
  },
);
