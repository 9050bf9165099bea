// Barrel of every workflow the orchestration worker registers (its single workflowsPath).
export { whaleRun } from './whale-run';
export * from './whale-run-messages';
