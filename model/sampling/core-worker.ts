// Worker-thread entry of OrtSampler: owns one SamplerCore (ORT sessions and the slot cache).
import { workerData } from 'node:worker_threads';
import { ModelConfig } from '../config';
import { serveRequests } from '../runtime/worker-client';
import { SamplerCore } from './core';
import type { SamplerOptions, SamplerRequest } from './types';

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
