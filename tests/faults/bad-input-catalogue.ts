// The catalogue of malformed inputs ("bad input"): every case names its input, what must happen
// (whose fault, which unit fails), the message a person sees, and the test that checks it. Tests fetch
// their case with `badInput('<id>')` and match `message`; tests/faults/bad-input-catalogue.test.ts checks
// that every case is used by its test file and that docs/faults-bad-input.md shows this table.

export type BadInputArea = 'cli' | 'temporal start' | 'update' | 'activity input' | 'artifact' | 'dataset' | 'harness' | 'filesystem';

export interface BadInputCase {
  id: string;
  area: BadInputArea;
  /** The malformed input, in words. */
  input: string;
  /** What happens: exit status, or which unit fails and what goes on. */
  outcome: string;
  /** The message a person sees (matched by the test). */
  message: RegExp;
  /** The test file that checks it (relative to the project root). */
  test: string;
}

const CLI = 'tests/cli/bad-input.test.ts';
const SERVER = 'tests/faults/bad-input-server.test.ts';
const FILES = 'tests/faults/bad-input-files.test.ts';

const EXIT2 = 'exit 2, nothing started';
const RUN_FAILS = 'run fails at once: non-retryable ApplicationFailure InvalidRunConfig listing the bad fields';
const UPDATE_REJECTED = 'update rejected by its validator with the reason; nothing changes, the run goes on and completes';

export const BAD_INPUTS: readonly BadInputCase[] = [
  // Through the `whale` command line: checked before anything is started.
  { id: 'cli-missing-file', area: 'cli', input: 'run config file that does not exist', outcome: EXIT2, message: /cannot read run config .*nope\.json: no such file/, test: CLI },
  { id: 'cli-not-json', area: 'cli', input: 'run config that is not JSON (cut off)', outcome: EXIT2, message: /run config .* is not valid JSON/, test: CLI },
  { id: 'cli-bad-field', area: 'cli', input: 'run config with weight.topK = -1', outcome: EXIT2, message: /invalid run config .*\n\s+- weight\.topK: Too small/, test: CLI },
  { id: 'cli-unknown-version', area: 'cli', input: 'run config of version 2', outcome: EXIT2, message: /version: 2 is not a config version this release knows; use "version": 1/, test: CLI },
  { id: 'cli-unknown-preset', area: 'cli', input: '--preset nonsense', outcome: EXIT2, message: /unknown preset 'nonsense'; presets: .*math-weights-only/, test: CLI },
  { id: 'cli-file-and-preset', area: 'cli', input: 'a config file and --preset together', outcome: EXIT2, message: /either a run config file or --preset, not both/, test: CLI },
  { id: 'cli-no-config', area: 'cli', input: '`whale run` with neither a file nor a preset', outcome: EXIT2, message: /give a run config file or --preset <name>/, test: CLI },
  { id: 'cli-unknown-queue', area: 'cli', input: '`whale worker --queue gpu`', outcome: EXIT2, message: /--queue must be one of orchestration, model, proposer; got 'gpu'/, test: CLI },
  { id: 'cli-audit-no-run', area: 'cli', input: '`whale audit` with no workflow id or history', outcome: EXIT2, message: /give a workflow id, or --history/, test: CLI },
  { id: 'cli-audit-not-history', area: 'cli', input: '`whale audit --history` of a JSON file that is not a history', outcome: 'exit 1, no report written', message: /is not a workflow history exported with `temporal workflow show --output json`/, test: CLI },
  { id: 'cli-unreachable-server', area: 'cli', input: 'WHALE_TEMPORAL_ADDRESS pointing at no server', outcome: 'exit 1', message: /cannot reach the Temporal server at 127\.0\.0\.1:1.*Start one with `whale dev`/, test: CLI },
  { id: 'cli-bad-seed', area: 'cli', input: '`--seed abc`', outcome: EXIT2, message: /--seed must be a non-negative integer; got 'abc'/, test: CLI },
  { id: 'cli-config-array', area: 'cli', input: 'run config that is a JSON array', outcome: EXIT2, message: /run config.* must be a JSON object/, test: CLI },
  { id: 'cli-unknown-field', area: 'cli', input: 'run config with a misspelt field ("wieght")', outcome: EXIT2, message: /\(top level\): Unrecognized key: "wieght"; remove it or fix its spelling/, test: CLI },
  { id: 'cli-method-switching', area: 'cli', input: "method 'whale-adaptive' with switching.kind 'fixed'", outcome: EXIT2, message: /switching\.kind: method 'whale-adaptive' needs switching\.kind 'patience'/, test: CLI },
  { id: 'cli-no-weight-steps', area: 'cli', input: "method 'weights-only' with budget.totalWeightSteps = 0", outcome: EXIT2, message: /budget\.totalWeightSteps: method 'weights-only' trains weights: budget\.totalWeightSteps must be at least 1/, test: CLI },
  { id: 'cli-bad-env', area: 'cli', input: 'WHALE_DEV_PORT=abc in the environment', outcome: 'exit 1', message: /invalid Temporal configuration:\n\s+devServer\.port: .*\(set by WHALE_DEV_PORT\?\)/, test: CLI },
  { id: 'cli-dev-unknown-worker', area: 'cli', input: '`whale dev --workers gpu`', outcome: 'exit 2 before the dev server starts (nothing left running)', message: /--workers: unknown worker\(s\) gpu; use any of orchestration, model, proposer/, test: CLI },
  { id: 'cli-audit-truncated-history', area: 'cli', input: '`whale audit --history` of a history file cut off mid-way', outcome: 'exit 1, no report written', message: /truncated\.json is not a workflow history exported with `temporal workflow show --output json`: .*JSON/, test: CLI },

  // Through `temporal workflow start` on a real dev server: the workflow validates its input.
  { id: 'start-several-bad-fields', area: 'temporal start', input: "method 'magic', seed -1 and weight.learningRate 5 at once", outcome: RUN_FAILS, message: /invalid run config \(fix these fields and start the run again\):\n\s+- method: Invalid option.*\n\s+- seed: Too small.*\n\s+- weight\.learningRate: Too big/, test: SERVER },
  { id: 'start-not-object', area: 'temporal start', input: '`--input \'"math"\'` (a JSON string)', outcome: RUN_FAILS, message: /the run config must be a JSON object .*got string/, test: SERVER },
  { id: 'start-no-input', area: 'temporal start', input: '`temporal workflow start` without --input', outcome: RUN_FAILS, message: /the run config must be a JSON object .*got undefined/, test: SERVER },
  { id: 'start-missing-version', area: 'temporal start', input: 'config without "version"', outcome: RUN_FAILS, message: /version: missing; add "version": 1/, test: SERVER },
  { id: 'start-bad-duration', area: 'temporal start', input: 'execution.fineTune.heartbeatTimeout = "soon"', outcome: RUN_FAILS + ' (before: the workflow task failed forever and the run looked stuck)', message: /execution\.fineTune\.heartbeatTimeout: expected a duration such as "500ms", "30s"/, test: SERVER },
  { id: 'start-bad-ref', area: 'temporal start', input: 'model.baseCheckpoint with a malformed uri and sha256', outcome: RUN_FAILS, message: /model\.baseCheckpoint\.uri: uri must look like cas:\/\/sha256\/<64 hex>/, test: SERVER },

  // Mid-run, through updates on a running run (scripted activities).
  { id: 'update-policy-not-object', area: 'update', input: 'setSwitchingPolicy "fast" (a string)', outcome: UPDATE_REJECTED, message: /the policy must be a JSON object, e\.g\. \{"kind":"patience","patienceEpochs":0\.1\}/, test: SERVER },
  { id: 'update-policy-wrong-type', area: 'update', input: 'setSwitchingPolicy {"weightEpochs": "soon"}', outcome: UPDATE_REJECTED, message: /invalid switching policy: weightEpochs: Invalid input: expected number, received string/, test: SERVER },
  { id: 'update-policy-unknown-kind', area: 'update', input: 'setSwitchingPolicy {"kind": "sometimes"}', outcome: UPDATE_REJECTED, message: /invalid switching policy: kind: Invalid discriminator value\. Expected 'fixed' \| 'patience'/, test: SERVER },
  { id: 'update-policy-unknown-field', area: 'update', input: 'setSwitchingPolicy {"harnessRound": 3} (misspelt)', outcome: UPDATE_REJECTED, message: /invalid switching policy: policy: Unrecognized key: "harnessRound"/, test: SERVER },
  { id: 'update-policy-out-of-range', area: 'update', input: 'setSwitchingPolicy {"harnessRounds": 0}', outcome: UPDATE_REJECTED, message: /invalid switching policy: harnessRounds: Too small: expected number to be >0/, test: SERVER },
  { id: 'update-stop-bad-mode', area: 'update', input: 'stopRun {"mode": "now"}', outcome: UPDATE_REJECTED, message: /stop mode must be 'finish-step' or 'abandon-step', got "now"/, test: SERVER },
  { id: 'update-policy-wrong-method', area: 'update', input: "setSwitchingPolicy on a 'weights-only' run", outcome: UPDATE_REJECTED, message: /method 'weights-only' has no switching policy to change; only 'whale-fixed' and 'whale-adaptive' runs do/, test: SERVER },

  // Activity inputs that pass the config schema but name things that do not exist or do not load.
  { id: 'activity-unknown-domain', area: 'activity input', input: "domain 'poetry'", outcome: 'prepareRun fails non-retryable (ConfigError): the run fails at once', message: /unknown domain "poetry"; known domains: search-qa, math, chess/, test: FILES },
  { id: 'activity-missing-checkpoint', area: 'activity input', input: 'model.baseCheckpoint naming an object the store does not hold', outcome: 'prepareRun fails non-retryable (ConfigError)', message: /model\.baseCheckpoint cas:\/\/sha256\/[0-9a-f]{64} is not in the artifact store: put it there .* or omit it/, test: FILES },
  { id: 'activity-truncated-base-checkpoint', area: 'activity input', input: 'model.baseCheckpoint: a checkpoint file cut in half (stored as given)', outcome: 'prepareRun fails non-retryable (ConfigError) instead of every later rollout', message: /model\.baseCheckpoint cas:\/\/sha256\/[0-9a-f]{64} is not a loadable WHALE checkpoint: expected \d+ bytes, found \d+ \(truncated or padded\)\. Re-save it/, test: FILES },

  // Stored artifacts damaged after they were written.
  { id: 'artifact-corrupt-checkpoint', area: 'artifact', input: 'checkpoint object with flipped bytes in the store', outcome: 'rolloutBatch fails (retryable: restoring the object lets the retry succeed); no object changes', message: /artifact cas:\/\/sha256\/[0-9a-f]{64} \(checkpoint\) is corrupt: expected \d+ bytes with sha256 [0-9a-f]{64}, found \d+ bytes with sha256 [0-9a-f]{64}\. Delete .*objects.* and re-run/, test: FILES },
  { id: 'artifact-truncated-checkpoint', area: 'artifact', input: 'checkpoint object truncated in the store', outcome: 'fineTuneStep fails (retryable) naming file and hash; no object changes', message: /\(checkpoint\) is corrupt: expected (\d+) bytes .*found (?!\1)\d+ bytes/, test: FILES },
  { id: 'artifact-corrupt-trajectories', area: 'artifact', input: 'trajectories object with flipped bytes in the store', outcome: 'fineTuneStep fails (retryable) naming file and hash; no object changes', message: /artifact cas:\/\/sha256\/[0-9a-f]{64} \(trajectories\) is corrupt: .*Delete .*objects/, test: FILES },
  { id: 'artifact-trajectories-broken-line', area: 'artifact', input: 'trajectories JSONL (hash intact) with a line that is not JSON', outcome: 'fineTuneStep fails non-retryable (CorruptArtifact) naming the artifact, hash and line; no checkpoint written', message: /trajectories cas:\/\/sha256\/[0-9a-f]{64} \(sha256 [0-9a-f]{64}, \d+ bytes\) cannot be trained on: trajectory JSONL line 2 is not valid JSON/, test: FILES },
  { id: 'artifact-trajectories-truncated', area: 'artifact', input: 'trajectories JSONL (hash intact) cut off mid-record', outcome: 'fineTuneStep fails non-retryable (CorruptArtifact) naming the last line', message: /cannot be trained on: trajectory JSONL line 3 is not valid JSON \(a truncated or corrupted file\)/, test: FILES },
  { id: 'artifact-trajectories-wrong-shape', area: 'artifact', input: 'trajectories JSONL line that is JSON but not a trajectory', outcome: 'fineTuneStep fails non-retryable (CorruptArtifact) naming the field', message: /cannot be trained on: trajectory JSONL line 1 is not a valid trajectory: .*schemaVersion/s, test: FILES },

  // Data sets read from files.
  { id: 'dataset-gsm8k-broken-json', area: 'dataset', input: 'GSM8K JSONL with a line cut off', outcome: 'load rejected at file:line (reject mode; skip mode lists it)', message: /gsm8k\.jsonl:2: /, test: FILES },
  { id: 'dataset-gsm8k-no-answer', area: 'dataset', input: 'GSM8K line whose answer has no "####"', outcome: 'load rejected at file:line', message: /gsm8k-noanswer\.jsonl:1: .*####/, test: FILES },
  { id: 'dataset-qa-not-object', area: 'dataset', input: 'QA corpus line that is a JSON array', outcome: 'load rejected at file:line', message: /corpus\.jsonl:2: .*JSON object/, test: FILES },
  { id: 'dataset-lichess-bad-fen', area: 'dataset', input: 'Lichess puzzle CSV row with an impossible FEN', outcome: 'load rejected at file:line', message: /puzzles\.csv:3: /, test: FILES },
  { id: 'dataset-missing-file', area: 'dataset', input: 'data set path that does not exist', outcome: 'load rejected naming the path', message: /no-such\.jsonl/, test: FILES },

  // Harness files.
  { id: 'harness-python', area: 'harness', input: 'a candidate harness written in Python', outcome: 'validateHarness marks the candidate invalid (compile-error) in the archive; the phase goes on', message: /compile-error: .*(syntax|expected)/i, test: FILES },
  { id: 'harness-type-error', area: 'harness', input: 'a candidate harness with maxTurns: "three" (does not type-check)', outcome: 'validateHarness marks the candidate invalid with the line; the phase goes on', message: /compile-error: .*maxTurns|compile-error: .*string.*number/i, test: FILES },
  { id: 'harness-base-not-typescript', area: 'harness', input: 'model.baseHarness: a file that is not TypeScript', outcome: 'rolloutBatch fails non-retryable (InvalidHarness): the run is at fault, not the worker', message: /harness [0-9a-f]{12} does not load: compile-error: /, test: FILES },

  // Directories that cannot be written.
  { id: 'fs-readonly-archive', area: 'filesystem', input: 'harness archive directory made read-only', outcome: 'validateHarness fails (retryable until fixed) naming the directory; no file half-written', message: /cannot write .*archives.*: its directory is read-only \(E(ACCES|PERM|ROFS)\)\. Nothing was written\. Make .* writable/, test: FILES },
  { id: 'fs-readonly-store', area: 'filesystem', input: 'artifact store directory made read-only', outcome: 'rolloutBatch fails (retryable until fixed) naming the directory; the store is unchanged', message: /cannot write .*objects.*: its directory is read-only \(E(ACCES|PERM|ROFS)\)\. Nothing was written\. .*WHALE_ARTIFACT_DIR/, test: FILES },
];

export function badInput(id: string): BadInputCase {
  const c = BAD_INPUTS.find((x) => x.id === id);
  if (!c) throw new Error(`no bad-input case '${id}' in tests/faults/bad-input-catalogue.ts`);
  return c;
}

/** The catalogue as the markdown table in docs/faults-bad-input.md. */
export function catalogueTable(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const rows = BAD_INPUTS.map((c, i) => `| ${i + 1} | ${c.area} | ${cell(c.input)} | ${cell(c.outcome)} | \`\` ${cell(c.message.source)} \`\` | \`${c.test}\` |`);
  return ['| # | area | malformed input | what happens | expected message (regex) | test |', '|---|---|---|---|---|---|', ...rows].join('\n');
}
