// The worker kinds, in a module of their own: `whale dev` and `whale demo` name them without loading the
// worker runtime (@temporalio/worker), which only the worker processes they start need.
export const WORKER_KINDS = ['orchestration', 'model', 'proposer'] as const;
export type WorkerKind = (typeof WORKER_KINDS)[number];
/** The worker kinds whose activities this release implements (the demo starts these). */
export const IMPLEMENTED_WORKER_KINDS: readonly WorkerKind[] = ['orchestration', 'model', 'proposer'];
