// The external-trainer protocol end to end with the project's own trainer: the dataset carries exactly the
// embedded trainer's examples (kept calls only, each with its trajectory); `whale train-external` as a
// command and as an HTTP endpoint produces the same checkpoint bytes as the embedded fine-tune step in
// deterministic mode, in minibatches of calls and of trajectories; a version-1 request still trains; a
// rejected request fails the step without retries.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DirectoryArtifactStore } from '../../store/artifact-store';
import { encodeText, renderChatPrompt, SPECIAL_TOKENS } from '../../model';
import { trainingExamplesFromTrajectories, trajectoriesToJsonl, type Trajectory } from '../../agent/trajectory';
import { datasetFromTrajectories, datasetToJsonl, examplesFromDataset } from '../../backends/trainer-protocol';
import { runExternalFineTuneStep } from '../../backends/external-fine-tune';
import { runEmbeddedFineTuneStep } from '../../backends/embedded-fine-tune';
import { fineTuneKey } from '../../backends/fine-tune-step';
import { parseTrainRequest, trainFromRequest } from '../../backends/project-trainer';
import type { TrainRequest } from '../../backends/trainer-protocol';
import type { FineTuneStepInput } from '../../activities/types';
import { ROOT, waitFor } from '../workflows/env';

const WHALE = path.join(ROOT, 'bin', 'whale.js');
let dir: string;
let store: DirectoryArtifactStore;
let httpTrainer: ChildProcess | undefined;

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'whale-trainer-'));
  store = new DirectoryArtifactStore(path.join(dir, 'artifacts'));
});
after(async () => {
  if (httpTrainer && httpTrainer.exitCode === null) {
    const exited = new Promise((r) => httpTrainer?.once('exit', r));
    httpTrainer.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

function trajectory(i: number, reward: 0 | 1): Trajectory {
  const prompt = renderChatPrompt([{ role: 'system', content: 'Use <calc>.' }, { role: 'user', content: `What is ${i} + ${i + 1}?` }]);
  const first = [...encodeText(`<calc>${i}+${i + 1}</calc>`)];
  const second = [...encodeText(`<answer>${2 * i + 1}</answer>`), SPECIAL_TOKENS.END];
  const prompt2 = renderChatPrompt([{ role: 'user', content: `What is ${i} + ${i + 1}?` }, { role: 'assistant', content: `<calc>${i}+${i + 1}</calc>` }, { role: 'tool', content: String(2 * i + 1) }]);
  return {
    schemaVersion: 1, trajectoryId: `t${i}#0@1`, taskId: `t${i}`, itemId: `t${i}`, sampleIndex: 0, runSeed: 1, step: 1, harnessId: 'h', harnessName: 'h0', domain: 'math',
    modelCalls: [
      { turn: 0, seed: 1, promptTokens: prompt, generatedTokens: first, logprobs: first.map(() => -0.5), text: '', stopReason: 'stop-string', kept: true, dropReason: null },
      { turn: 1, seed: 2, promptTokens: prompt2, generatedTokens: second, logprobs: second.map(() => -0.5), text: '', stopReason: 'stop-token', kept: true, dropReason: null },
    ],
    turns: [], messages: [], finalAnswer: String(2 * i + 1), stopReason: 'answer', stopDetail: '', harnessFailure: null, reward,
    tokenCounts: { prompt: prompt.length + prompt2.length, generated: first.length + second.length },
  };
}

/** Trajectory `i` with its first call dropped (a rejected turn that a `replace` removed). */
function withDroppedFirstCall(t: Trajectory): Trajectory {
  return { ...t, modelCalls: t.modelCalls.map((c, k) => (k === 0 ? { ...c, kept: false, dropReason: 'rejected-removed' as const } : c)) };
}

async function stepInput(extra: Partial<FineTuneStepInput> = {}): Promise<FineTuneStepInput> {
  const trajectories = Array.from({ length: 6 }, (_, i) => trajectory(i, i % 3 === 0 ? 0 : 1)).map((t, i) => (i === 4 ? withDroppedFirstCall(t) : t));
  return {
    runId: 'r', step: 1, seed: 5, acceptThreshold: 0.5, learningRate: 1e-4, minibatchSize: 4, weightDecay: 0, clipNorm: 1, deterministic: true, ...extra,
    checkpoint: await store.put('checkpoint', readFileSync(path.join(ROOT, 'data', 'base-policies', 'math.ckpt'))),
    trajectories: await store.put('trajectories', trajectoriesToJsonl(trajectories)),
  };
}

const ctx = { heartbeat: () => undefined, throwIfCancelled: () => undefined };

describe('external-trainer protocol', () => {
  it('carries exactly the embedded trainer\'s examples in its dataset', () => {
    const trajectories = Array.from({ length: 4 }, (_, i) => trajectory(i, i === 2 ? 0 : 1));
    const records = datasetFromTrajectories(trajectories, 0.5);
    assert.equal(records.length, 6);
    assert.deepEqual(records[0].loss_mask, [0, 0, 1]);
    assert.equal(records[1].messages[records[1].messages.length - 1].content, '<answer>1</answer>');
    const want = trainingExamplesFromTrajectories(trajectories, { minReward: 0.5 });
    assert.deepEqual(examplesFromDataset(datasetToJsonl(records)), want);
    assert.deepEqual(records.map((r) => r.trajectory_id), ['t0#0@1', 't0#0@1', 't1#0@1', 't1#0@1', 't3#0@1', 't3#0@1']);
    // A dropped call is not in the dataset; the kept calls of its trajectory are.
    const dropped = datasetFromTrajectories(trajectories.map((t, i) => (i === 1 ? withDroppedFirstCall(t) : t)), 0.5);
    assert.deepEqual(dropped.map((r) => r.id), ['t0#0@1/0', 't0#0@1/1', 't1#0@1/1', 't3#0@1/0', 't3#0@1/1']);
    // Without ids, the messages and masks give the same tokens; only the reply (and its <|end|>) is trained.
    const noIds = records.map(({ prompt_token_ids: _p, completion_token_ids: _c, ...r }) => r);
    const fromMessages = examplesFromDataset(datasetToJsonl(noIds));
    // A reply that ended with <|end|> renders to the very same example; one cut at a stop string gains its <|end|>.
    assert.deepEqual(fromMessages[1], want[1]);
    assert.deepEqual(fromMessages[0].tokens, [...want[0].tokens, SPECIAL_TOKENS.END]);
    assert.deepEqual(fromMessages[0].weights, [...want[0].weights, 1]);
  });

  it('trains through `whale train-external` as a command and over HTTP to the embedded step\'s checkpoint', async (t) => {
    const input = await stepInput();
    const embedded = await runEmbeddedFineTuneStep({ store, threads: 1 }, input, { ...ctx, resumeFrom: undefined });
    assert.ok(embedded.updated && embedded.minibatches >= 1);

    const viaCommand = await runExternalFineTuneStep({ store: new DirectoryArtifactStore(path.join(dir, 'a2')), artifactRoot: path.join(dir, 'a2'), trainer: { kind: 'command', command: [process.execPath, WHALE, 'train-external', '--threads', '1'], timeoutMs: 600_000 } }, await copyInputs(input, path.join(dir, 'a2')), ctx);
    assert.equal(viaCommand.checkpoint.sha256, embedded.checkpoint.sha256, 'command trainer checkpoint');
    assert.equal(viaCommand.minibatches, embedded.minibatches);
    assert.equal(viaCommand.acceptedTokens, embedded.acceptedTokens);

    httpTrainer = spawn(process.execPath, [WHALE, 'train-external', '--port', '0', '--threads', '1'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    httpTrainer.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    const url = await waitFor('the HTTP trainer to listen', async () => /(http:\/\/\S+\/train)/.exec(out)?.[1], 120_000);
    const root3 = path.join(dir, 'a3');
    const viaHttp = await runExternalFineTuneStep({ store: new DirectoryArtifactStore(root3), artifactRoot: root3, trainer: { kind: 'http', url, timeoutMs: 600_000 } }, await copyInputs(input, root3), ctx);
    assert.equal(viaHttp.checkpoint.sha256, embedded.checkpoint.sha256, 'HTTP trainer checkpoint');
    t.diagnostic(`embedded, command and HTTP trainers: checkpoint ${embedded.checkpoint.sha256.slice(0, 16)}, ${embedded.minibatches} minibatches`);

    // A rejected request (here: a dataset whose bytes do not match their hash) fails without retries.
    await assert.rejects(
      runExternalFineTuneStep({ store: new DirectoryArtifactStore(root3), artifactRoot: root3, trainer: { kind: 'command', command: [process.execPath, '-e', 'process.stderr.write("bad request"); process.exit(2)'], timeoutMs: 60_000 } }, { ...input, step: 2 }, ctx),
      (err: Error & { nonRetryable?: boolean; type?: string }) => err.nonRetryable === true && err.type === 'ExternalTrainerError' && /exit 2/.test(err.message),
    );
  });
});

describe('external-trainer protocol, minibatches of trajectories', () => {
  it('trains through `whale train-external` to the embedded step\'s checkpoint; a version-1 request still trains', async () => {
    const input = await stepInput({ minibatchUnit: 'trajectories', minibatchSize: 2 });
    const embedded = await runEmbeddedFineTuneStep({ store, threads: 1 }, input, { ...ctx, resumeFrom: undefined });
    // 4 accepted trajectories in minibatches of 2: two updates; 7 of their 8 calls trained.
    assert.equal(embedded.minibatches, 2);
    assert.deepEqual([embedded.keptCalls, embedded.droppedCalls], [7, 1]);
    const root = path.join(dir, 'u2');
    const viaCommand = await runExternalFineTuneStep({ store: new DirectoryArtifactStore(root), artifactRoot: root, trainer: { kind: 'command', command: [process.execPath, WHALE, 'train-external', '--threads', '1'], timeoutMs: 600_000 } }, await copyInputs(input, root), ctx);
    assert.equal(viaCommand.checkpoint.sha256, embedded.checkpoint.sha256, 'command trainer checkpoint');
    assert.deepEqual([viaCommand.minibatches, viaCommand.acceptedTokens, viaCommand.keptCalls], [embedded.minibatches, embedded.acceptedTokens, embedded.keptCalls]);
    const request = JSON.parse(readFileSync(path.join(root, 'external-trainer', fineTuneKey(await copyInputs(input, root)).slice(0, 32), 'request.json'), 'utf8')) as TrainRequest;
    assert.equal(request.protocol, 'whale-external-trainer/2');
    assert.equal(request.hyperparameters.minibatch_unit, 'trajectories');

    // The same dataset sent as a version-1 request (no unit: minibatches of calls) is still accepted.
    const v1 = { ...request, protocol: 'whale-external-trainer/1', hyperparameters: { ...request.hyperparameters, minibatch_unit: undefined } };
    const response = await trainFromRequest(parseTrainRequest(JSON.parse(JSON.stringify(v1))), { threads: 1 });
    assert.equal(response.protocol, 'whale-external-trainer/1');
    assert.equal(response.metrics?.minibatches, 4, '7 calls in minibatches of 2');
    assert.throws(() => parseTrainRequest({ ...request, hyperparameters: { ...request.hyperparameters, minibatch_unit: undefined } }), /needs minibatch_unit/);
  });
});

async function copyInputs(input: FineTuneStepInput, root: string): Promise<FineTuneStepInput> {
  const s = new DirectoryArtifactStore(root);
  return { ...input, checkpoint: await s.put('checkpoint', await store.get(input.checkpoint)), trajectories: await s.put('trajectories', await store.get(input.trajectories)) };
}
