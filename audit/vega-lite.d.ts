// vega-lite ships its types behind package "exports", which this project's CommonJS module resolution does
// not read; this declares the one function the audit uses.
declare module 'vega-lite' {
  export function compile(spec: Record<string, unknown>): { spec: import('vega').Spec };
}
