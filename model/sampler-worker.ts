// Worker-thread entry of OrtSampler: owns one SamplerCore (ORT sessions and the slot cache).
import { workerData } from 'node:worker_threads';
import type { GenerateRequest } from './backend';
import { ModelConfig } from './config';
import { SamplerCore, SamplerOptions } from './sampler-core';
import { serveRequests } from './worker-client';

/** `cancel`: one flag per request in shared memory; the main thread sets a flag to stop that row between decode steps. */
export type SamplerRequest = { op: 'ready' } | { op: 'generate'; requests: GenerateRequest[]; cancel?: Int32Array } | { op: 'close' };

const { config, params, options } = workerData as { config: ModelConfig; params: Float32Array; options: SamplerOptions };
const core = SamplerCore.create(config, params, options);
// An unobserved rejection here would kill the worker; the 'ready' request reports it instead.
core.catch(() => undefined);

serveRequests<SamplerRequest>(async (req) => {
  const sampler = await core;
  if (req.op === 'ready') return [sampler.maxContext, []];
  if (req.op === 'generate') return [{ results: await sampler.generate(req.requests, req.cancel), stats: sampler.stats }, []];
  await sampler.close();
  return [null, []];
});
