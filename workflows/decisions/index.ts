// The decision module's public face: pure, deterministic rules the run workflow calls between activity
// results. Plain TypeScript only (no Temporal, Node, zod or onnx); every state is JSON data.
export * from './errors';
export * from './schedule';
export * from './weight-patience';
export * from './harness-patience';
export * from './accept';
export * from './ledger';
export * from './test-tracker';
export * from './budget';
