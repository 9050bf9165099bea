// Renders the synthetic knowledge base into a short-document corpus (one document per entity) and
// derives single- and multi-hop questions from it. Documents are one or two sentences so that a whole
// episode (question, a couple of retrieved passages, the answer) fits in ~1 KB of bytes.
import { Rng } from '../../common/rng';
import type { EnvTask } from '../types';
import { KnowledgeIndex, type KnowledgeBase } from './knowledge-base';

export interface CorpusDoc {
  id: string;
  title: string;
  text: string;
}

/** Hidden reference for a QA task: every accepted answer string. */
export interface QaReference {
  answers: string[];
}

export type QaTask = EnvTask<QaReference>;

export function renderCorpus(kb: KnowledgeBase): CorpusDoc[] {
  const ix = new KnowledgeIndex(kb);
  const docs: CorpusDoc[] = [];
  for (const c of kb.countries) {
    docs.push({ id: c.id, title: c.name, text: `${c.name} is a country. Its capital is ${ix.cityOf(c.capitalCityId).name}.` });
  }
  for (const c of kb.cities) {
    docs.push({ id: c.id, title: c.name, text: `${c.name} is a city in ${ix.countryOf(c.countryId).name}.` });
  }
  for (const { person: p, company: co } of kb.clusters) {
    docs.push({ id: p.id, title: p.name, text: `${p.name} is a ${p.job} born in ${ix.cityOf(p.bornCityId).name}. ${p.name} founded ${co.name}.` });
    docs.push({ id: co.id, title: co.name, text: `${co.name} is a ${co.kind} based in ${ix.cityOf(co.cityId).name}, founded in ${co.year} by ${p.name}.` });
  }
  return docs;
}

type QuestionKind = 'born' | 'job' | 'founder' | 'based' | 'year' | 'born-country' | 'founder-born' | 'founder-job' | 'based-country';
const SINGLE_HOP: readonly QuestionKind[] = ['born', 'job', 'founder', 'based', 'year'];
const MULTI_HOP: readonly QuestionKind[] = ['born-country', 'founder-born', 'founder-job', 'based-country'];

export interface QuestionOptions {
  seed: string;
  /** Probability that a cluster's question is multi-hop (two searches needed). */
  multiHopRate: number;
}
export const DEFAULT_QUESTION_OPTIONS: QuestionOptions = { seed: 'whale-search-qa-questions-v1', multiHopRate: 0.4 };

/** One question per cluster; the cluster is the task's item key. */
export function generateQuestions(kb: KnowledgeBase, options: QuestionOptions = DEFAULT_QUESTION_OPTIONS): QaTask[] {
  const ix = new KnowledgeIndex(kb);
  const rng = new Rng(options.seed);
  return kb.clusters.map((cl, i) => {
    const kind = rng.chance(options.multiHopRate) ? rng.pick(MULTI_HOP) : rng.pick(SINGLE_HOP);
    const p = cl.person;
    const co = cl.company;
    const born = ix.cityOf(p.bornCityId);
    const based = ix.cityOf(co.cityId);
    const qa: Record<QuestionKind, [string, string]> = {
      born: [`Where was ${p.name} born?`, born.name],
      job: [`What is the job of ${p.name}?`, p.job],
      founder: [`Who founded ${co.name}?`, p.name],
      based: [`Where is ${co.name} based?`, based.name],
      year: [`In what year was ${co.name} founded?`, String(co.year)],
      'born-country': [`In which country was ${p.name} born?`, ix.countryOf(born.countryId).name],
      'founder-born': [`Where was the founder of ${co.name} born?`, born.name],
      'founder-job': [`What is the job of the founder of ${co.name}?`, p.job],
      'based-country': [`In which country is ${co.name} based?`, ix.countryOf(based.countryId).name],
    };
    const [question, answer] = qa[kind];
    return {
      id: `search-qa/syn/${String(i).padStart(5, '0')}`,
      itemId: cl.id,
      question,
      hidden: { answers: [answer] },
      view: { source: 'synthetic', kind, hops: MULTI_HOP.includes(kind) ? 2 : 1 },
    };
  });
}
