// The namespace runs live in: which of the project's search attributes it lacks, and preparing it (the
// attributes and the retention) on any reachable server through Temporal's operator and workflow services.
// Used by `whale namespace setup` and by every worker's start-up check.
import { temporal } from '@temporalio/proto';
import type { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';

/** What both connection kinds (the client's and the worker's native one) offer. */
export type NamespaceServices = Pick<Connection, 'workflowService' | 'operatorService'>;

const IndexedValueType = temporal.api.enums.v1.IndexedValueType;

export interface AttributeState {
  name: string;
  type: string;
  /** present: registered with this type; missing: not registered; wrong-type: registered with another type. */
  state: 'present' | 'missing' | 'wrong-type';
  registeredType?: string;
}

function indexedType(type: string): temporal.api.enums.v1.IndexedValueType {
  return IndexedValueType[`INDEXED_VALUE_TYPE_${type}` as keyof typeof IndexedValueType];
}

function typeName(t: temporal.api.enums.v1.IndexedValueType | number): string {
  return (IndexedValueType[t] ?? String(t)).replace(/^INDEXED_VALUE_TYPE_/, '');
}

/** The project's search attributes as the namespace has them. */
export async function searchAttributeStates(conn: NamespaceServices, namespace: string): Promise<AttributeState[]> {
  const res = await conn.operatorService.listSearchAttributes({ namespace });
  const custom = res.customAttributes ?? {};
  return ALL_SEARCH_ATTRIBUTES.map((k) => {
    const have = custom[k.name];
    if (have === undefined) return { name: k.name, type: k.type, state: 'missing' };
    return typeName(have) === k.type ? { name: k.name, type: k.type, state: 'present' } : { name: k.name, type: k.type, state: 'wrong-type', registeredType: typeName(have) };
  });
}

/** The start-up warning naming what is missing (null when every attribute is there). */
export function missingAttributesWarning(states: AttributeState[], namespace: string): string | null {
  const bad = states.filter((s) => s.state !== 'present');
  if (bad.length === 0) return null;
  const names = bad.map((s) => (s.state === 'missing' ? `${s.name} (${s.type})` : `${s.name} (registered as ${s.registeredType}, needs ${s.type})`)).join(', ');
  return `namespace '${namespace}' lacks search attributes ${names}: runs fail to record their progress (\`whale list\`, \`whale status\`) until \`whale namespace setup\` registers them`;
}

const DURATION_S: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** "720h" -> seconds; the retention is whole seconds, at least one day on most servers. */
export function retentionSeconds(text: string): number {
  const m = /^(\d+)(s|m|h|d)$/.exec(text.trim());
  if (!m || Number(m[1]) <= 0) throw new Error(`invalid retention ${JSON.stringify(text)}: use a number and a unit, e.g. 72h or 30d`);
  return Number(m[1]) * DURATION_S[m[2]];
}

export interface NamespaceSetupResult {
  namespace: string;
  /** True when the namespace did not exist and was registered. */
  created: boolean;
  added: string[];
  alreadyPresent: string[];
  retention: { before: number | null; after: number; changed: boolean };
}

const errorCode = (err: unknown): number | undefined => (err as { code?: number }).code;
/** gRPC status codes the services answer with. */
const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;
const PERMISSION_DENIED = 7;
const UNIMPLEMENTED = 12;

function explain(err: unknown, what: string, address: string, namespace: string): Error {
  const code = errorCode(err);
  const message = (err as Error).message;
  const hint = code === PERMISSION_DENIED
    ? 'the credentials lack the permission: an admin of the namespace must run it (on Temporal Cloud, add search attributes in the Cloud UI or with tcld)'
    : code === UNIMPLEMENTED
      ? 'this server does not offer the operator service (Temporal Cloud: add search attributes in the Cloud UI or with tcld)'
      : 'check the address and namespace (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE) and that the server answers';
  return new Error(`could not ${what} on ${address} (namespace ${namespace}): ${message}; ${hint}`, { cause: err });
}

/**
 * Registers the namespace when it is missing, adds the project's missing search attributes, and sets the
 * retention. Idempotent: a second call changes nothing. An attribute registered with another type is an
 * error (a server cannot change a type; the run would fail to upsert it).
 */
export async function setupNamespace(conn: NamespaceServices, opts: { namespace: string; address: string; retention: string }): Promise<NamespaceSetupResult> {
  const { namespace, address } = opts;
  const seconds = retentionSeconds(opts.retention);
  let before: number | null = null;
  let created = false;
  try {
    const d = await conn.workflowService.describeNamespace({ namespace });
    before = d.config?.workflowExecutionRetentionTtl?.seconds != null ? Number(d.config.workflowExecutionRetentionTtl.seconds) : null;
  } catch (err) {
    if (errorCode(err) !== NOT_FOUND) throw explain(err, 'read the namespace', address, namespace);
    try {
      await conn.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(seconds * 1000) });
      created = true;
      before = seconds;
    } catch (e) {
      if (errorCode(e) !== ALREADY_EXISTS) throw explain(e, 'register the namespace', address, namespace);
    }
  }
  let states: AttributeState[];
  // A namespace registered a moment ago reaches the server's namespace cache within seconds: until then it is
  // "not found" (polled, up to 60 s).
  const deadline = Date.now() + 60_000;
  for (let delayMs = 250; ; delayMs = Math.min(delayMs * 2, 2_000)) {
    try {
      states = await searchAttributeStates(conn, namespace);
      break;
    } catch (err) {
      if (!(created && errorCode(err) === NOT_FOUND && Date.now() < deadline)) throw explain(err, 'list the search attributes', address, namespace);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
  const wrong = states.filter((s) => s.state === 'wrong-type');
  if (wrong.length) {
    throw new Error(`namespace '${namespace}' has ${wrong.map((s) => `${s.name} as ${s.registeredType}`).join(', ')}, but runs write ${wrong.map((s) => `${s.name} as ${s.type}`).join(', ')}: a search attribute's type cannot change; remove it (temporal operator search-attribute remove) or use another namespace`);
  }
  const missing = states.filter((s) => s.state === 'missing');
  if (missing.length) {
    try {
      await conn.operatorService.addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(missing.map((s) => [s.name, indexedType(s.type)])) });
    } catch (err) {
      throw explain(err, `add the search attributes ${missing.map((s) => s.name).join(', ')}`, address, namespace);
    }
  }
  const changed = before !== seconds;
  if (changed) {
    try {
      await conn.workflowService.updateNamespace({ namespace, config: { workflowExecutionRetentionTtl: msToTs(seconds * 1000) } });
    } catch (err) {
      throw explain(err, `set the retention to ${opts.retention}`, address, namespace);
    }
  }
  return {
    namespace, created, added: missing.map((s) => s.name), alreadyPresent: states.filter((s) => s.state === 'present').map((s) => s.name),
    retention: { before, after: seconds, changed },
  };
}
