// Reverse-mode autodiff over the ops a GPT-2 block needs (composites with their own rules, such as
// attention and the MLP, live in train-blocks.ts). Each op emits its forward ONNX nodes and records
// a backward rule that emits gradient nodes; `backward` walks the tape in reverse and sums fan-in gradients.
// Shapes are static (one graph per length bucket), which keeps broadcasting rules and reductions explicit.
import { A, AttrValue } from './onnx-proto';
import { GraphBuilder } from './graph-builder';

type Grad = string | undefined;
interface Entry {
  inputs: string[];
  outputs: string[];
  backward: (gys: Grad[]) => Grad[];
}

export class Tape {
  readonly shapes = new Map<string, number[]>();
  private readonly entries: Entry[] = [];
  private readonly tracked = new Set<string>();

  /**
   * @param pinOrder make data gradients wait for weight gradients (see zeroAfter): needed for memory at
   *   long contexts, a small cost otherwise.
   */
  constructor(
    readonly b: GraphBuilder,
    readonly pinOrder = false,
  ) {}

  /** Extra Gemm C input (a zero depending on `grads`) when pinning order, else nothing. */
  orderAfter(...grads: [string | undefined, number][]): string[] {
    return this.pinOrder ? [this.zeroAfter(...grads)] : [];
  }

  /** Registers a graph value; `requiresGrad` marks the leaves gradients are wanted for. */
  leaf(name: string, shape: number[], requiresGrad: boolean): string {
    this.shapes.set(name, shape);
    if (requiresGrad) this.tracked.add(name);
    return name;
  }

  shape(name: string): number[] {
    const s = this.shapes.get(name);
    if (!s) throw new Error(`autodiff: no shape recorded for ${name}`);
    return s;
  }

  private record(inputs: string[], outputs: string[], shapes: number[][], backward: Entry['backward']): void {
    outputs.forEach((o, i) => this.shapes.set(o, shapes[i]));
    if (inputs.some((i) => this.tracked.has(i))) {
      outputs.forEach((o) => this.tracked.add(o));
      this.entries.push({ inputs, outputs, backward });
    }
  }

  private sumTo(g: string, from: number[], to: number[]): string {
    if (from.join() === to.join()) return g;
    const lead = from.length - to.length;
    const axes: number[] = [];
    for (let i = 0; i < from.length; i++) if (i < lead || (to[i - lead] === 1 && from[i] !== 1)) axes.push(i);
    const r = this.b.op('ReduceSum', [g, this.b.constI64(axes)], { keepdims: A.i(1) });
    return this.b.op('Reshape', [r, this.b.constI64(to)]);
  }

  private broadcastShape(a: number[], c: number[]): number[] {
    const n = Math.max(a.length, c.length);
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const x = a[a.length - n + i] ?? 1;
      const y = c[c.length - n + i] ?? 1;
      out.push(Math.max(x, y));
    }
    return out;
  }

  /** y = x @ w (+ bias) for 2-D x; `transB` reads w as [N, K] (the tied LM head). */
  linear(x: string, w: string, bias?: string, transB = false): string {
    const [m] = this.shape(x);
    const ws = this.shape(w);
    const n = transB ? ws[0] : ws[1];
    const attrs: Record<string, AttrValue> = transB ? { transB: A.i(1) } : {};
    const y = this.b.op('Gemm', bias ? [x, w, bias] : [x, w], attrs);
    const inputs = bias ? [x, w, bias] : [x, w];
    this.record(inputs, [y], [[m, n]], ([gy]) => {
      if (!gy) return [];
      const gw = transB ? this.b.op('Gemm', [gy, x], { transA: A.i(1) }) : this.b.op('Gemm', [x, gy], { transA: A.i(1) });
      const gb = bias ? this.b.op('ReduceSum', [gy, this.b.constI64([0])], { keepdims: A.i(0) }) : undefined;
      const gx = this.b.op('Gemm', [gy, w, ...this.orderAfter([gw, 2], [gb, 1])], transB ? {} : { transB: A.i(1) });
      return [gx, gw, gb];
    });
    return y;
  }

  /**
   * A scalar 0 computed from one element of each given gradient. ORT orders ready nodes by creation index,
   * so a weight gradient that nothing downstream waits for can be deferred to the end of the run, keeping
   * its inputs (forward activations) alive all through backward. Mixing this zero into the gradient that
   * flows on (a Gemm's C input, or a small scale) makes the chain wait for it instead.
   */
  zeroAfter(...grads: [string | undefined, number][]): string {
    const b = this.b;
    let acc: string | undefined;
    for (const [g, rank] of grads) {
      if (!g) continue;
      const corner = b.op('Slice', [g, b.constI64(Array(rank).fill(0)), b.constI64(Array(rank).fill(1))]);
      const z = b.op('Mul', [b.op('ReduceSum', [corner], { keepdims: A.i(0) }), b.constF(0)]);
      acc = acc ? b.op('Add', [acc, z]) : z;
    }
    return acc ?? b.constF(0);
  }

  /** Batched matmul over equal leading dims: [..., M, K] @ [..., K, N]. */
  bmm(a: string, c: string): string {
    const as = this.shape(a);
    const cs = this.shape(c);
    const y = this.b.op('MatMul', [a, c]);
    const perm = as.map((_, i) => i);
    [perm[perm.length - 1], perm[perm.length - 2]] = [perm[perm.length - 2], perm[perm.length - 1]];
    this.record([a, c], [y], [[...as.slice(0, -1), cs[cs.length - 1]]], ([gy]) => {
      if (!gy) return [];
      const ga = this.b.op('MatMul', [gy, this.b.op('Transpose', [c], { perm: A.ints(perm) })]);
      const gc = this.b.op('MatMul', [this.b.op('Transpose', [a], { perm: A.ints(perm) }), gy]);
      return [ga, gc];
    });
    return y;
  }

  add(a: string, c: string): string {
    const as = this.shape(a);
    const cs = this.shape(c);
    const out = this.broadcastShape(as, cs);
    const y = this.b.op('Add', [a, c]);
    this.record([a, c], [y], [out], ([gy]) => (gy ? [this.sumTo(gy, out, as), this.sumTo(gy, out, cs)] : []));
    return y;
  }

  mul(a: string, c: string): string {
    const as = this.shape(a);
    const cs = this.shape(c);
    const out = this.broadcastShape(as, cs);
    const y = this.b.op('Mul', [a, c]);
    this.record([a, c], [y], [out], ([gy]) => {
      if (!gy) return [];
      return [this.sumTo(this.b.op('Mul', [gy, c]), out, as), this.sumTo(this.b.op('Mul', [gy, a]), out, cs)];
    });
    return y;
  }

  reshape(x: string, shape: number[]): string {
    const xs = this.shape(x);
    const y = this.b.op('Reshape', [x, this.b.constI64(shape)]);
    this.record([x], [y], [shape], ([gy]) => [gy ? this.b.op('Reshape', [gy, this.b.constI64(xs)]) : undefined]);
    return y;
  }

  transpose(x: string, perm: number[]): string {
    const xs = this.shape(x);
    const inv = perm.map((_, i) => perm.indexOf(i));
    const y = this.b.op('Transpose', [x], { perm: A.ints(perm) });
    this.record([x], [y], [perm.map((p) => xs[p])], ([gy]) => [gy ? this.b.op('Transpose', [gy], { perm: A.ints(inv) }) : undefined]);
    return y;
  }

  split(x: string, axis: number, sizes: number[]): string[] {
    const xs = this.shape(x);
    const ys = this.b.nodeN('Split', [x, this.b.constI64(sizes)], sizes.length, { axis: A.i(axis) });
    const shapes = sizes.map((s) => xs.map((d, i) => (i === axis ? s : d)));
    this.record([x], ys, shapes, (gys) => {
      if (gys.every((g) => !g)) return [];
      const parts = gys.map((g, i) => g ?? this.b.zeros(shapes[i]));
      return [this.b.op('Concat', parts, { axis: A.i(axis) })];
    });
    return ys;
  }

  concat(xs: string[], axis: number): string {
    const shapes = xs.map((x) => this.shape(x));
    const out = shapes[0].map((d, i) => (i === axis ? shapes.reduce((a, sh) => a + sh[axis], 0) : d));
    const y = this.b.op('Concat', xs, { axis: A.i(axis) });
    this.record(xs, [y], [out], ([gy]) => (gy ? this.b.nodeN('Split', [gy, this.b.constI64(shapes.map((sh) => sh[axis]))], xs.length, { axis: A.i(axis) }) : []));
    return y;
  }

  /** Rows [start, end) of a 2-D table (position embeddings for the first T positions). */
  sliceRows(x: string, start: number, end: number): string {
    const xs = this.shape(x);
    const y = this.b.op('Slice', [x, this.b.constI64([start]), this.b.constI64([end]), this.b.constI64([0])]);
    this.record([x], [y], [[end - start, ...xs.slice(1)]], ([gy]) => {
      if (!gy) return [];
      if (start === 0 && end === xs[0]) return [gy];
      const pads = [start, ...xs.slice(1).map(() => 0), xs[0] - end, ...xs.slice(1).map(() => 0)];
      return [this.b.op('Pad', [gy, this.b.constI64(pads)], { mode: A.s('constant') })];
    });
    return y;
  }

  /** Embedding lookup: table [V, d], int64 ids [...] -> [..., d]; backward scatter-adds (duplicates sum). */
  gather(table: string, ids64: string, idsShape: number[]): string {
    const ts = this.shape(table);
    const y = this.b.op('Gather', [table, ids64], { axis: A.i(0) });
    this.record([table], [y], [[...idsShape, ts[1]]], ([gy]) => {
      if (!gy) return [];
      const idx = this.b.op('Unsqueeze', [ids64, this.b.constI64([-1])]);
      return [this.b.op('ScatterND', [this.b.zeros(ts), idx, gy], { reduction: A.s('add') })];
    });
    return y;
  }

  /** LayerNorm over the last axis of a 2-D [N, d] input, via the opset-17 op (its Mean/InvStdDev feed backward). */
  layerNorm(x: string, g: string, bias: string, eps: number): string {
    const [n, d] = this.shape(x);
    const [y, mean, inv] = this.b.floatType === 'float64' ? this.layerNormPrimitive(x, g, bias, eps, d) : this.b.nodeN('LayerNormalization', [x, g, bias], 3, { axis: A.i(-1), epsilon: A.f(eps) });
    this.record([x, g, bias], [y], [[n, d]], ([gy]) => {
      if (!gy) return [];
      const b = this.b;
      const last = b.constI64([-1]);
      const xhat = b.op('Mul', [b.op('Sub', [x, mean]), inv]);
      const dxhat = b.op('Mul', [gy, g]);
      const invD = b.constF(1 / d);
      const m1 = b.op('Mul', [b.op('ReduceSum', [dxhat, last], { keepdims: A.i(1) }), invD]);
      const m2 = b.op('Mul', [b.op('ReduceSum', [b.op('Mul', [dxhat, xhat]), last], { keepdims: A.i(1) }), invD]);
      const rows = b.constI64([0]);
      const gg = b.op('ReduceSum', [b.op('Mul', [gy, xhat]), rows], { keepdims: A.i(0) });
      const gb = b.op('ReduceSum', [gy, rows], { keepdims: A.i(0) });
      const inner = b.op('Sub', [b.op('Sub', [dxhat, m1]), b.op('Mul', [xhat, m2])]);
      const gx = b.op('Mul', [inner, this.pinOrder ? b.op('Add', [inv, this.zeroAfter([gg, 1], [gb, 1])]) : inv]);
      return [gx, gg, gb];
    });
    return y;
  }

  /** ORT's CPU LayerNormalization has no float64 statistics kernel, so the float64 build composes it. */
  private layerNormPrimitive(x: string, g: string, bias: string, eps: number, d: number): [string, string, string] {
    const b = this.b;
    const last = b.constI64([-1]);
    const invD = b.constF(1 / d);
    const mean = b.op('Mul', [b.op('ReduceSum', [x, last], { keepdims: A.i(1) }), invD]);
    const xc = b.op('Sub', [x, mean]);
    const variance = b.op('Mul', [b.op('ReduceSum', [b.op('Mul', [xc, xc]), last], { keepdims: A.i(1) }), invD]);
    const inv = b.op('Reciprocal', [b.op('Sqrt', [b.op('Add', [variance, b.constF(eps)])])]);
    const y = b.op('Add', [b.op('Mul', [b.op('Mul', [xc, inv]), g]), bias]);
    return [y, mean, inv];
  }

  /** Runs the recorded backward rules from a scalar `loss`; returns the gradient value name for each leaf. */
  backward(loss: string, leaves: string[]): Map<string, string> {
    const grads = new Map<string, string[]>([[loss, [this.b.constF(1)]]]);
    const take = (name: string): Grad => {
      const list = grads.get(name);
      if (!list || list.length === 0) return undefined;
      let acc = list[0];
      for (let i = 1; i < list.length; i++) acc = this.b.op('Add', [acc, list[i]]);
      grads.set(name, [acc]);
      return acc;
    };
    for (let e = this.entries.length - 1; e >= 0; e--) {
      const entry = this.entries[e];
      const gys = entry.outputs.map(take);
      if (gys.every((g) => !g)) continue;
      const gxs = entry.backward(gys);
      entry.inputs.forEach((inp, i) => {
        const gx = gxs[i];
        if (!gx || !this.tracked.has(inp)) return;
        const list = grads.get(inp) ?? [];
        list.push(gx);
        grads.set(inp, list);
      });
    }
    const out = new Map<string, string>();
    for (const leaf of leaves) {
      const g = take(leaf);
      out.set(leaf, g ?? this.b.zeros(this.shape(leaf)));
    }
    return out;
  }

  /** Records a composite op whose forward nodes the caller already emitted (attention, loss). */
  recordComposite(inputs: string[], outputs: string[], shapes: number[][], backward: Entry['backward']): void {
    this.record(inputs, outputs, shapes, backward);
  }
}
