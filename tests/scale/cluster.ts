// Moved to testbed/scale-cluster.ts (scripts share it); this re-export stays only until every test imports it
// from there.
export * from '../../testbed/scale-cluster';
