// Minimal ONNX protobuf encoder: just the ModelProto subset our generated graphs use (nodes, typed
// attributes, raw-data initializers, value infos with static or named dims). Field numbers follow onnx.proto3.
import { Writer } from 'protobufjs/minimal';

export type ElemType = 'float32' | 'float64' | 'int32' | 'int64' | 'bool';

const ONNX_DTYPE: Record<ElemType, number> = { float32: 1, int32: 6, int64: 7, bool: 9, float64: 11 };

export type TensorData = Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;

export interface TensorValue {
  type: ElemType;
  dims: readonly number[];
  data: TensorData;
}

export type AttrValue =
  | { kind: 'int'; v: number }
  | { kind: 'float'; v: number }
  | { kind: 'ints'; v: readonly number[] }
  | { kind: 'string'; v: string }
  | { kind: 'tensor'; v: TensorValue };

/** Attribute constructors: ONNX attributes are typed, so callers say which type they mean. */
export const A = {
  i: (v: number): AttrValue => ({ kind: 'int', v }),
  f: (v: number): AttrValue => ({ kind: 'float', v }),
  ints: (v: readonly number[]): AttrValue => ({ kind: 'ints', v }),
  s: (v: string): AttrValue => ({ kind: 'string', v }),
  t: (v: TensorValue): AttrValue => ({ kind: 'tensor', v }),
};

export interface NodeSpec {
  op: string;
  inputs: readonly string[];
  outputs: readonly string[];
  attrs: Record<string, AttrValue>;
  domain?: string;
}

export interface ValueInfo {
  name: string;
  type: ElemType;
  dims: readonly (number | string)[];
}

export interface GraphSpec {
  name: string;
  nodes: readonly NodeSpec[];
  initializers: ReadonlyMap<string, TensorValue>;
  inputs: readonly ValueInfo[];
  outputs: readonly ValueInfo[];
  opset: number;
  msOpset?: number;
}

function tag(w: Writer, field: number, wire: number): Writer {
  return w.uint32((field << 3) | wire);
}

function writeTensor(w: Writer, t: TensorValue, name: string): void {
  for (const d of t.dims) tag(w, 1, 0).int64(d);
  tag(w, 2, 0).int32(ONNX_DTYPE[t.type]);
  if (name) tag(w, 8, 2).string(name);
  const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  tag(w, 9, 2).bytes(bytes);
}

function writeAttr(w: Writer, name: string, a: AttrValue): void {
  tag(w, 1, 2).string(name);
  switch (a.kind) {
    case 'float':
      tag(w, 2, 5).float(a.v);
      tag(w, 20, 0).int32(1);
      break;
    case 'int':
      tag(w, 3, 0).int64(a.v);
      tag(w, 20, 0).int32(2);
      break;
    case 'string':
      tag(w, 4, 2).bytes(new TextEncoder().encode(a.v));
      tag(w, 20, 0).int32(3);
      break;
    case 'tensor':
      tag(w, 5, 2).fork();
      writeTensor(w, a.v, '');
      w.ldelim();
      tag(w, 20, 0).int32(4);
      break;
    case 'ints':
      for (const x of a.v) tag(w, 8, 0).int64(x);
      tag(w, 20, 0).int32(7);
      break;
  }
}

function writeValueInfo(w: Writer, v: ValueInfo): void {
  tag(w, 1, 2).string(v.name);
  tag(w, 2, 2).fork(); // TypeProto
  tag(w, 1, 2).fork(); // TypeProto.Tensor
  tag(w, 1, 0).int32(ONNX_DTYPE[v.type]);
  tag(w, 2, 2).fork(); // TensorShapeProto
  for (const d of v.dims) {
    tag(w, 1, 2).fork();
    if (typeof d === 'number') tag(w, 1, 0).int64(d);
    else tag(w, 2, 2).string(d);
    w.ldelim();
  }
  w.ldelim();
  w.ldelim();
  w.ldelim();
}

/** Serialises a graph as an ONNX ModelProto (IR version 8: opset 17 era, read by every ORT >= 1.14). */
export function encodeModel(g: GraphSpec): Uint8Array {
  const w = Writer.create();
  tag(w, 1, 0).int64(8); // ir_version
  tag(w, 2, 2).string('whale-model-runtime'); // producer_name
  tag(w, 7, 2).fork(); // graph
  for (const n of g.nodes) {
    tag(w, 1, 2).fork();
    for (const i of n.inputs) tag(w, 1, 2).string(i);
    for (const o of n.outputs) tag(w, 2, 2).string(o);
    tag(w, 4, 2).string(n.op);
    for (const [k, a] of Object.entries(n.attrs)) {
      tag(w, 5, 2).fork();
      writeAttr(w, k, a);
      w.ldelim();
    }
    if (n.domain) tag(w, 7, 2).string(n.domain);
    w.ldelim();
  }
  tag(w, 2, 2).string(g.name);
  for (const [name, t] of g.initializers) {
    tag(w, 5, 2).fork();
    writeTensor(w, t, name);
    w.ldelim();
  }
  for (const v of g.inputs) {
    tag(w, 11, 2).fork();
    writeValueInfo(w, v);
    w.ldelim();
  }
  for (const v of g.outputs) {
    tag(w, 12, 2).fork();
    writeValueInfo(w, v);
    w.ldelim();
  }
  w.ldelim();
  tag(w, 8, 2).fork(); // opset_import
  tag(w, 1, 2).string('');
  tag(w, 2, 0).int64(g.opset);
  w.ldelim();
  if (g.msOpset) {
    tag(w, 8, 2).fork();
    tag(w, 1, 2).string('com.microsoft');
    tag(w, 2, 0).int64(g.msOpset);
    w.ldelim();
  }
  return w.finish();
}
