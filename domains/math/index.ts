// The math domain: seeded multi-step arithmetic word problems (levels 1-3), a calculator tool, and exact
// numeric verification. Real data: GSM8K-style JSONL (answer after "####"), see loader.ts.
import type { Domain, DomainInstance, DomainSourceSpec, EnvTask } from '../types';
import { describeLoad } from '../common/line-loader';
import { buildInstance, once, requireFile, sizesOf } from '../common/instance';
import { createMathEnvironment, type MathState } from './environment';
import { generateMathProblems, type MathReference } from './generator';
import { loadGsm8kJsonl } from './loader';

export const MATH_SPLIT_SEED = 'whale-math-splits-v1';

const FILE_ROLES = { problems: 'GSM8K-style JSONL: {"question", "answer": "... #### <number>", "id"?}' };

/** Tool-use diagnostics: calls, errors, and whether a calculator result already equalled the answer. */
function mathDiagnostics(task: EnvTask<MathReference>, state: MathState): Record<string, number | boolean> {
  const ok = state.calls.filter((c) => c.ok);
  return {
    calculatorCalls: state.calls.length,
    calculatorErrors: state.calls.length - ok.length,
    calculatorReachedAnswer: ok.some((c) => Number(c.result) === task.hidden.answer),
    answered: state.answer !== null,
  };
}

const loadSynthetic = once((): DomainInstance<MathReference, MathState> => {
  const tasks = generateMathProblems();
  return buildInstance(createMathEnvironment(), tasks, MATH_SPLIT_SEED, sizesOf({ kind: 'synthetic' }), [
    `synthetic: ${tasks.length} problems (levels 1-3)`,
  ], mathDiagnostics);
});

function loadFiles(source: Extract<DomainSourceSpec, { kind: 'files' }>): DomainInstance<MathReference, MathState> {
  const file = requireFile('math', source.files, 'problems', FILE_ROLES);
  const problems = loadGsm8kJsonl(file, { onMalformed: source.onMalformed, limit: source.maxTasks });
  return buildInstance(createMathEnvironment(), problems.items, source.splitSeed ?? MATH_SPLIT_SEED, sizesOf(source), [describeLoad(file, problems)], mathDiagnostics);
}

export const mathDomain: Domain<MathReference, MathState> = {
  name: 'math',
  description: 'Multi-step arithmetic word problems with a calculator tool; exact numeric match of the final answer.',
  fileRoles: FILE_ROLES,
  load: (source) => (source.kind === 'synthetic' ? loadSynthetic() : loadFiles(source)),
};
