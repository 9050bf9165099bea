// Imperative builder for ONNX graphs: unique value names, typed constants in the graph's float type, and
// serialisation through onnx-proto. Both the training graph and the decoder graphs are written with it.
import { A, AttrValue, ElemType, encodeModel, NodeSpec, TensorValue, ValueInfo } from './onnx-proto';

export type FloatType = 'float32' | 'float64';

export class GraphBuilder {
  private readonly nodes: NodeSpec[] = [];
  private readonly initializers = new Map<string, TensorValue>();
  private readonly inputs: ValueInfo[] = [];
  private readonly outputs: ValueInfo[] = [];
  private readonly constCache = new Map<string, string>();
  private counter = 0;

  constructor(
    readonly name: string,
    readonly floatType: FloatType,
  ) {}

  fresh(hint: string): string {
    return `${hint}_${this.counter++}`;
  }

  input(name: string, type: ElemType, dims: readonly (number | string)[]): string {
    this.inputs.push({ name, type, dims });
    return name;
  }

  output(name: string, type: ElemType, dims: readonly (number | string)[]): void {
    this.outputs.push({ name, type, dims });
  }

  initializer(name: string, t: TensorValue): string {
    this.initializers.set(name, t);
    return name;
  }

  /** Adds a node and returns its output names (fresh names unless given). */
  nodeN(op: string, inputs: readonly string[], nOut: number, attrs: Record<string, AttrValue> = {}, outNames?: readonly string[], domain?: string): string[] {
    const outputs = outNames ? [...outNames] : Array.from({ length: nOut }, () => this.fresh(op.toLowerCase()));
    this.nodes.push({ op, inputs, outputs, attrs, domain });
    return outputs;
  }

  op(op: string, inputs: readonly string[], attrs: Record<string, AttrValue> = {}, outName?: string): string {
    return this.nodeN(op, inputs, 1, attrs, outName ? [outName] : undefined)[0];
  }

  /** A float constant in the graph's float type (deduplicated), shaped `dims` (scalar when omitted). */
  constF(values: number | readonly number[], dims: readonly number[] = []): string {
    const arr = typeof values === 'number' ? [values] : [...values];
    const key = `f:${dims.join('x')}:${arr.join(',')}`;
    const hit = this.constCache.get(key);
    if (hit) return hit;
    const data = this.floatType === 'float64' ? Float64Array.from(arr) : Float32Array.from(arr);
    const name = this.initializer(this.fresh('const_f'), { type: this.floatType, dims, data });
    this.constCache.set(key, name);
    return name;
  }

  constI64(values: number | readonly number[], dims?: readonly number[]): string {
    const arr = typeof values === 'number' ? [values] : [...values];
    const shape = dims ?? (typeof values === 'number' ? [] : [arr.length]);
    const key = `i:${shape.join('x')}:${arr.join(',')}`;
    const hit = this.constCache.get(key);
    if (hit) return hit;
    const name = this.initializer(this.fresh('const_i'), { type: 'int64', dims: shape, data: BigInt64Array.from(arr.map(BigInt)) });
    this.constCache.set(key, name);
    return name;
  }

  /** A float tensor of zeros in the graph's float type (ConstantOfShape keeps the model file small). */
  zeros(dims: readonly number[]): string {
    const value: TensorValue = { type: this.floatType, dims: [1], data: this.floatType === 'float64' ? new Float64Array(1) : new Float32Array(1) };
    return this.op('ConstantOfShape', [this.constI64(dims)], { value: A.t(value) });
  }

  floatArray(data: ArrayLike<number>): Float32Array | Float64Array {
    return this.floatType === 'float64' ? Float64Array.from(data) : Float32Array.from(data);
  }

  toBytes(opset = 17): Uint8Array {
    return encodeModel({ name: this.name, nodes: this.nodes, initializers: this.initializers, inputs: this.inputs, outputs: this.outputs, opset, msOpset: 1 });
  }
}
