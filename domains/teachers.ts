// Teacher policies of the built-in domains by name, for generating pretraining demonstrations through the
// real agent loop:
//   const backend = new TeacherBackend(tasks, createTeacher(name, instance), { runSeed, step, samplesPerTask, maxTurns });
//   runEpisodes({ backend, environment: instance.environment, harness, tasks, samplesPerTask, runSeed, step, ... })
// under h0 (and other trusted harnesses, for prompt-format variety). Use D_weight tasks only: teachers
// read the hidden reference, and demonstrations on D_harness or D_test would leak them into the weights.
import { chessTeacher } from './chess/teacher';
import { TeacherBackend, type TeacherPolicy } from './common/teacher';
import { mathTeacher } from './math/teacher';
import type { BuiltinDomainName } from './registry';
import type { QaReference } from './search-qa/corpus';
import { qaTeacher } from './search-qa/teacher';
import type { DomainInstance, EnvTask } from './types';

export { TeacherBackend };
export type { TeacherPolicy };

export function createTeacher(domain: BuiltinDomainName, instance: DomainInstance): TeacherPolicy<unknown> {
  switch (domain) {
    case 'math':
      return mathTeacher() as TeacherPolicy<unknown>;
    case 'chess':
      return chessTeacher() as TeacherPolicy<unknown>;
    case 'search-qa': {
      // MEMORY answers are drawn from D_weight's answers: plausible words of the right kinds.
      const pool = (instance.splits.weight as EnvTask<QaReference>[]).map((t) => t.hidden.answers[0]);
      return qaTeacher(pool) as TeacherPolicy<unknown>;
    }
  }
}
