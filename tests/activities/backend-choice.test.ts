// The model worker chooses its backends from its backend configuration and passes them in (nothing patched
// after construction): with an external trainer the fineTuneStep activity reaches that trainer, once per
// distinct input (a repeat returns the stored result); an OpenAI-compatible sampler's checks run at start.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createModelWorkerDeps } from '../../workers/model';
import { loadTemporalConfig } from '../../temporal.config';
import { ModelBackendsConfig } from '../../backends/config';
import { fineTuneKey } from '../../backends/fine-tune-step';
import { encodeText, renderChatPrompt, SPECIAL_TOKENS } from '../../model';
import { trajectoriesToJsonl, type Trajectory } from '../../agent/trajectory';
import type { FineTuneStepInput } from '../../activities/types';
import { ROOT } from '../workflows/env';

let dir: string;
before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'whale-backend-choice-'));
});
after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function trajectory(i: number, reward: 0 | 1): Trajectory {
  const prompt = renderChatPrompt([{ role: 'user', content: `What is ${i} + ${i + 1}?` }]);
  const reply = [...encodeText(`<answer>${2 * i + 1}</answer>`), SPECIAL_TOKENS.END];
  return {
    schemaVersion: 1, trajectoryId: `t${i}#0@1`, taskId: `t${i}`, itemId: `t${i}`, sampleIndex: 0, runSeed: 1, step: 1, harnessId: 'h', harnessName: 'h0', domain: 'math',
    modelCalls: [{ turn: 0, seed: 1, promptTokens: prompt, generatedTokens: reply, logprobs: reply.map(() => -0.5), text: '', stopReason: 'stop-token', kept: true, dropReason: null }],
    turns: [], messages: [], finalAnswer: String(2 * i + 1), stopReason: 'answer', stopDetail: '', harnessFailure: null, reward,
    tokenCounts: { prompt: prompt.length, generated: reply.length },
  };
}

/** A trainer command that logs each call to `log` and answers its base checkpoint as the new one. */
function loggingTrainer(log: string): string[] {
  const script = `
    const fs = require('node:fs');
    let body = '';
    process.stdin.on('data', (d) => (body += d));
    process.stdin.on('end', () => {
      const req = JSON.parse(body);
      fs.appendFileSync(${JSON.stringify(log)}, req.step + '\\n');
      process.stdout.write(JSON.stringify({ protocol: req.protocol, checkpoint: { ref: req.base_checkpoint.ref }, metrics: { minibatches: 7 } }) + '\\n');
    });`;
  return [process.execPath, '-e', script];
}

describe('the model worker\'s backend choice', () => {
  it('routes fineTuneStep to the configured external trainer, once per distinct input', async () => {
    const artifactDir = path.join(dir, 'artifacts');
    const log = path.join(dir, 'trainer-calls.log');
    const backends = ModelBackendsConfig.parse({ trainer: { kind: 'command', command: loggingTrainer(log), timeoutMs: 60_000 } });
    const deps = createModelWorkerDeps(loadTemporalConfig({ artifactDir }), { threads: 1, backends });
    try {
      const input: FineTuneStepInput = {
        runId: 'r', step: 3, seed: 5, acceptThreshold: 0.5, learningRate: 1e-4, minibatchSize: 2, weightDecay: 0, clipNorm: 1, deterministic: true,
        checkpoint: await deps.store.put('checkpoint', readFileSync(path.join(ROOT, 'data', 'base-policies', 'math.ckpt'))),
        trajectories: await deps.store.put('trajectories', trajectoriesToJsonl([trajectory(0, 1), trajectory(1, 0), trajectory(2, 1)])),
      };
      const result = await deps.activities.fineTuneStep(input);
      assert.deepEqual(
        { updated: result.updated, checkpoint: result.checkpoint.sha256, accepted: result.acceptedTrajectories, minibatches: result.minibatches, calls: [result.keptCalls, result.droppedCalls] },
        { updated: true, checkpoint: input.checkpoint.sha256, accepted: 2, minibatches: 7, calls: [2, 0] },
        'the external trainer\'s answer (the embedded trainer would have written new weights and counted 1 minibatch)',
      );
      assert.ok(existsSync(path.join(artifactDir, 'external-trainer', fineTuneKey(input).slice(0, 32), 'request.json')), 'the request went through the shared artifact directory');
      assert.deepEqual(await deps.activities.fineTuneStep(input), result, 'a repeat returns the stored result');
      assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), ['3'], 'the trainer ran once');
    } finally {
      await deps.close();
    }
  });

  it('builds the OpenAI-compatible sampler when configured (its API-key check fails the worker\'s start)', () => {
    const backends = ModelBackendsConfig.parse({ rollouts: { kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: 'WHALE_TEST_UNSET_API_KEY' } });
    assert.throws(
      () => createModelWorkerDeps(loadTemporalConfig({ artifactDir: path.join(dir, 'artifacts-2') }), { threads: 1, backends }),
      /rollouts\.apiKeyEnv names WHALE_TEST_UNSET_API_KEY, which is not set/,
    );
  });
});
