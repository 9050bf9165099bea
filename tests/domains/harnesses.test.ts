// The seed harnesses (h0) and the reference harnesses of each built-in domain: they pass the sandbox's
// static checks and the contract, drive the real agent loop end to end with an oracle policy, keep whole
// episodes within the 1,024-token context, and the reference harness shows more than h0 where it should.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkToolParams } from '../../agent/harness-contract';
import { runEpisodes } from '../../agent/loop';
import type { Trajectory } from '../../agent/trajectory';
import { loadHarnessInProcess } from '../../harness-sandbox/in-process';
import { normalizeTextAnswer } from '../../domains/common/normalize';
import { readSeedHarness } from '../../domains/harnesses';
import { readReferenceHarness } from '../../domains/reference-harnesses';
import { getDomain, type BuiltinDomainName } from '../../domains/registry';
import type { DomainInstance, EnvTask } from '../../domains/types';
import { OracleBackend, assistantTurns, toolMessages, type Policy } from './oracle-backend';

const SAMPLING = { temperature: 1, topK: 20, topP: 1, maxNewTokensPerTurn: 96, maxEpisodeTokens: 400 };
const SAMPLE = 96;

function load(source: string) {
  const r = loadHarnessInProcess(source);
  if (!r.ok) assert.fail(`harness invalid: ${r.violations.map((v) => `${v.where}: ${v.message}`).join('; ')}`);
  return r.runner;
}

/** Finds the task whose question the prompt shows (questions are unique within a split). */
function taskOf<H>(tasks: readonly EnvTask<H>[], prompt: string): EnvTask<H> {
  const t = tasks.find((x) => prompt.includes(x.question));
  if (!t) throw new Error(`oracle: no task question in prompt:\n${prompt}`);
  return t;
}

async function run(domain: BuiltinDomainName, source: string, policyFor: (tasks: EnvTask<unknown>[], inst: DomainInstance) => Policy): Promise<Trajectory[]> {
  const inst = getDomain(domain).load({ kind: 'synthetic' });
  const tasks = inst.splits.harness.slice(0, SAMPLE);
  const harness = load(source);
  assert.deepEqual(checkToolParams(harness.manifest.config, inst.environment.tools), []);
  const backend = new OracleBackend(policyFor(tasks, inst));
  const r = await runEpisodes({ backend, environment: inst.environment, harness, tasks, samplesPerTask: 1, sampling: SAMPLING, runSeed: 1, step: 0 });
  return r.trajectories;
}

const successRate = (ts: Trajectory[]) => ts.filter((t) => t.reward === 1).length / ts.length;
const maxEpisodeTokens = (ts: Trajectory[]) => Math.max(...ts.map((t) => Math.max(...t.modelCalls.map((c) => c.promptTokens.length + c.generatedTokens.length))));

/** QA oracle: answers when the reference is visible in a tool message; else searches the question, then a name it read. */
const qaPolicy = (tasks: EnvTask<unknown>[]): Policy => (prompt) => {
  const task = taskOf(tasks as EnvTask<{ answers: string[] }>[], prompt);
  const seen = ` ${normalizeTextAnswer(toolMessages(prompt).join(' '))} `;
  const answer = task.hidden.answers[0];
  if (seen.includes(` ${normalizeTextAnswer(answer)} `)) return `<answer>${answer}</answer>`;
  if (assistantTurns(prompt) === 0) return `<search>${task.question}</search>`;
  // The bridge entity of a two-hop question, read from the passages shown so far.
  const bridge = task.question.includes('founder of') ? / by ([A-Z][a-z]+ [A-Z][a-z]+)\./ : task.question.includes('country was') ? / born in ([A-Z][a-z]+)\./ : / based in ([A-Z][a-z]+),/;
  const name = bridge.exec(toolMessages(prompt).join('\n'));
  return name ? `<search>${name[1]}</search>` : '<answer>unknown</answer>';
};

test('search QA: h0 and the reference harness run end to end; the reference shows the answer far more often', async () => {
  const h0 = await run('search-qa', readSeedHarness('search-qa'), qaPolicy);
  const strong = await run('search-qa', readReferenceHarness('search-qa'), qaPolicy);
  assert.ok(h0.every((t) => t.harnessFailure === null) && strong.every((t) => t.harnessFailure === null));
  assert.ok(successRate(h0) < 0.6, `h0 oracle success ${successRate(h0)}`);
  console.log(`search-qa oracle success: h0 ${successRate(h0).toFixed(3)}, reference ${successRate(strong).toFixed(3)}; max episode tokens h0 ${maxEpisodeTokens(h0)}, reference ${maxEpisodeTokens(strong)}`);
  assert.ok(successRate(strong) > 0.9, `reference oracle success ${successRate(strong)}`);
  assert.ok(maxEpisodeTokens(strong) <= 1024 && maxEpisodeTokens(h0) <= 1024, `max episode tokens ${maxEpisodeTokens(strong)}`);
});

/** Math oracle: calls the calculator with the operation chain, then copies the result. */
const mathPolicy = (tasks: EnvTask<unknown>[]): Policy => (prompt) => {
  const task = taskOf(tasks, prompt);
  const result = /(-?\d+(?:\.\d+)?)/.exec(toolMessages(prompt).join(' '));
  if (result) return `The answer is <answer>${result[1]}</answer>`;
  const [, start, ...ops] = task.itemId.split(':');
  const expr = ops.reduce((acc, op) => `(${acc})${{ add: '+', sub: '-', mul: '*', div: '/' }[op.slice(0, 3)] ?? '?'}${op.slice(3)}`, start);
  return `<calc>${expr}</calc>`;
};

test('math: h0 and the reference harness run end to end with the calculator and fit the context', async () => {
  for (const source of [readSeedHarness('math'), readReferenceHarness('math')]) {
    const ts = await run('math', source, mathPolicy);
    assert.equal(successRate(ts), 1, ts.find((t) => t.reward === 0)?.stopDetail);
    assert.ok(ts.every((t) => t.turns[0].tool?.tool === 'calc'));
    assert.ok(maxEpisodeTokens(ts) <= 1024);
    console.log(`math max episode tokens (${ts[0].harnessName}): ${maxEpisodeTokens(ts)}`);
  }
});

/** Chess oracle: plays the solution move if the harness showed it in a legal-move list, else the line anyway. */
const chessPolicy = (onlyIfListed: boolean) => (tasks: EnvTask<unknown>[]): Policy => (prompt) => {
  const task = taskOf(tasks as EnvTask<{ line: string[] }>[], prompt);
  const ply = 2 * assistantTurns(prompt);
  const move = task.hidden.line[ply] ?? task.hidden.line[0];
  const lastList = prompt.lastIndexOf('Legal:');
  if (onlyIfListed && (lastList < 0 || !prompt.slice(lastList).includes(move))) return '<answer>none</answer>';
  return `<answer>${move}</answer>`;
};

test('chess: whole lines solve under both harnesses; only the reference shows the legal moves every turn', async () => {
  const h0 = await run('chess', readSeedHarness('chess'), chessPolicy(false));
  assert.equal(successRate(h0), 1, h0.find((t) => t.reward === 0)?.stopDetail);
  const h0Listed = await run('chess', readSeedHarness('chess'), chessPolicy(true));
  assert.equal(successRate(h0Listed), 0, 'h0 shows no legal-move list');
  const strong = await run('chess', readReferenceHarness('chess'), chessPolicy(true));
  assert.equal(successRate(strong), 1, strong.find((t) => t.reward === 0)?.stopDetail);
  assert.ok(strong.some((t) => t.turns.length >= 2), 'mate-in-2 puzzles take two moves');
  assert.ok(maxEpisodeTokens(strong) <= 1024, `max episode tokens ${maxEpisodeTokens(strong)}`);
  console.log(`chess max episode tokens: h0 ${maxEpisodeTokens(h0)}, reference ${maxEpisodeTokens(strong)}`);
});
