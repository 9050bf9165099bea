// The texts an external proposer gets: the skill file (harness contract, archive layout, rules, required
// output) and the per-round task prompt. Shared by the coding-agent CLI (files in its workspace) and the
// OpenAI-compatible proposer (system and user messages).
import type { ToolSpec } from '../../agent/environment';
import { HARNESS_LIMITS } from '../../agent/harness-contract';
import { WORKSPACE, slotFile } from './types';

export function skillText(opts: { promptOnly: boolean; fencedOutput: boolean }): string {
  const output = opts.fencedOutput
    ? [
        'Reply with the candidates as fenced blocks, nothing else is read:',
        '```harness c1',
        '<the whole TypeScript file of candidate 1>',
        '```',
        '(one block per candidate: c1, c2, ...), then one block',
        '```json pending_eval',
        '{"candidates":[{"file":"c1","parent":"<archive name>","hypothesis":"...","changes":"...","axis":"..."}]}',
        '```',
      ]
    : [
        `Write candidate i to \`${slotFile(1).replace('c1', 'c<i>')}\` (i = 1..K) and then \`${WORKSPACE.pendingEval}\`:`,
        '`{"candidates":[{"file":"proposals/c1.ts","parent":"<archive name>","hypothesis":"...","changes":"...","axis":"..."}]}`.',
        `Only files in the slots and ${WORKSPACE.pendingEval} are taken. Put your own notes under \`${WORKSPACE.notesDir}/\`.`,
        'Do not modify or delete any other file: a workspace whose archive files changed is discarded.',
      ];
  return [
    '# Skill: proposing WHALE harness candidates',
    '',
    '## The harness contract',
    'A harness is one TypeScript file whose default export is an object with exactly these keys:',
    '`name`, `systemPrompt`, `userTemplate` (placeholders `{question}`, `{tools}`, `{<view or observation key>}`),',
    `\`maxTurns\` (1..${HARNESS_LIMITS.maxTurns}), \`retryBudgets: { formatErrors, illegalActions }\` (0..${HARNESS_LIMITS.maxRetryBudget} each),`,
    '`toolParams` (per tool, integer values inside the ranges the environment declares) and `hooks`',
    '(optional, synchronous, pure: `setup`, `formatObservation`, `parseAction`, `feedback`, `shouldStop`).',
    'Type it with `import type { HarnessDefinition } from \'../agent/harness-types\';` (type imports are erased);',
    'the only value import allowed is `whale:helpers` (fillTemplate, truncate, extractTag, extractTags, normalizeWhitespace).',
    'No I/O, timers, async, `process`, `globalThis`, `Math.random`, `Date.now`, module-level `let`/`var`.',
    'Actions: `<tool>input</tool>` for a tool, `<answer>text</answer>` for the final answer or move. The answer',
    'must be a verbatim span of what the model generated that turn: a harness may never produce or pick the answer.',
    'A harness may not change the model, data, verifier, environment transitions or reference answers.',
    '',
    '## The archive (your working directory is a copy of it)',
    '- `candidates/<name>/harness.ts`: each candidate\'s source (`incoming` is the harness the phase started from).',
    '- `candidates/<name>/meta.json`: parent, hypothesis, changes, axis; `validation.json`: validity and reasons.',
    '- `candidates/<name>/score.json`: success rate, mean turns, mean tokens on D_harness.',
    '- `candidates/<name>/trajectories.jsonl`: every D_harness rollout (messages, actions, tool outputs, stop reason, reward).',
    '- `rounds/r<k>/`: what each proposal round asked for and produced.',
    '',
    '## Rules',
    '- One mechanism per candidate; copy the accepted harness (or another strong one) and change that one thing.',
    '- No constant-only parameter tuning; rotate axes (prompt, observation, feedback, control, retrieval, parsing).',
    '- No dataset-specific branches: nothing keyed to particular questions, answers or task ids.',
    '- Read failed trajectories end to end first and prototype the mechanism on real failures.',
    opts.promptOnly ? '- PROMPT-ONLY MODE: change only the `systemPrompt` and `userTemplate` strings; everything else stays byte-identical.' : '',
    '',
    '## Required output',
    ...output,
  ].filter((l, i, a) => l !== '' || a[i - 1] !== '').join('\n') + '\n';
}

export function taskText(opts: { round: number; count: number; accepted: string; domain: string; tools: readonly ToolSpec[]; answerKind: string; promptOnly: boolean }): string {
  const tools = opts.tools.length ? opts.tools.map((t) => `- <${t.name}>: ${t.description}; params: ${JSON.stringify(t.params)}`).join('\n') : '- (none: the model only submits an answer)';
  return [
    `# Task: proposal round ${opts.round} of a harness phase (domain ${opts.domain})`,
    '',
    `Write ${opts.count} new harness candidates (K = ${opts.count}). The accepted harness is \`candidates/${opts.accepted}/harness.ts\`.`,
    `A submission is an ${opts.answerKind}. The environment's tools:`,
    tools,
    '',
    `Read ${WORKSPACE.skill} for the contract, the archive layout, the rules and the output format.`,
    opts.promptOnly ? 'Prompt-only mode: only systemPrompt and userTemplate may change.' : '',
  ].join('\n') + '\n';
}
