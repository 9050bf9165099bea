// The math environment: a `calc` tool (safe evaluator) and a numeric final answer. The state records
// every calculator call and the answer, so traces show whether the model used the tool (a learnable
// choice) and whether it copied the operands right (a presentation problem a harness can attack).
import type { DomainEnvironment, EnvTask, JsonObject, SubmitResult, ToolCall, ToolResult, ToolSpec } from '../../agent/environment';
import { evaluateExpression, formatNumber } from './calculator';
import type { MathReference } from './generator';
import { normalizeMathText, verifyMathAnswer } from './verifier';

export type MathState = {
  calls: { expression: string; result: string; ok: boolean }[];
  answer: string | null;
};

export const CALC_TOOL: ToolSpec = {
  name: 'calc',
  description: 'calc(expression): evaluates arithmetic with + - * / and parentheses, e.g. <calc>(12+7)*3</calc>',
  params: {},
  // It computes: a harness that rewrites the model's expression into the problem's would write the answer.
  computes: true,
};

export function createMathEnvironment(): DomainEnvironment<MathReference, MathState> {
  return {
    domain: 'math',
    tools: [CALC_TOOL],
    answerKind: 'answer',

    initialState(): MathState {
      return { calls: [], answer: null };
    },

    observe(task: EnvTask<MathReference>, state: MathState): JsonObject {
      return { question: task.question, calculatorCalls: state.calls.length };
    },

    executeTool(_task: EnvTask<MathReference>, state: MathState, call: ToolCall): ToolResult<MathState> {
      if (call.tool !== CALC_TOOL.name) {
        return { state, ok: false, text: `unknown tool "${call.tool}"; the only tool is calc`, data: null };
      }
      const r = evaluateExpression(call.input);
      const result = r.ok ? r.text : `error: ${r.error}`;
      const next: MathState = { ...state, calls: [...state.calls, { expression: call.input, result, ok: r.ok }] };
      return { state: next, ok: r.ok, text: result, data: r.ok ? { value: r.value } : { error: r.error } };
    },

    submit(_task: EnvTask<MathReference>, state: MathState, answer: string): SubmitResult<MathState> {
      return { state: { ...state, answer }, outcome: 'final', text: 'answer recorded', data: null };
    },

    normalizeAnswer: normalizeMathText,
    answerPattern: /-?\d+(?:\.\d+)?/,

    alternativeAnswer(task: EnvTask<MathReference>, _state: MathState, answer: string): string {
      const right = verifyMathAnswer(answer, task.hidden).reward === 1;
      return formatNumber(right ? task.hidden.answer + 1 : task.hidden.answer);
    },

    verify(task: EnvTask<MathReference>, finalState: MathState): 0 | 1 {
      return verifyMathAnswer(finalState.answer, task.hidden).reward;
    },
  };
}
