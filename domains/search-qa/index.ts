// The search QA domain: a synthetic knowledge base rendered into short documents, single- and two-hop
// questions about person/company clusters, a BM25 search tool, and normalised-exact-match verification.
// Real data: NQ/HotpotQA-style question JSONL plus a corpus JSONL (see loader.ts).
import type { Domain, DomainInstance, DomainSourceSpec, EnvTask } from '../types';
import { normalizeTextAnswer } from '../common/normalize';
import { describeLoad } from '../common/line-loader';
import { buildInstance, once, requireFile, sizesOf } from '../common/instance';
import { Bm25Index } from './bm25';
import { generateQuestions, renderCorpus, type QaReference } from './corpus';
import { createSearchQaEnvironment, type QaState } from './environment';
import { generateKnowledgeBase } from './knowledge-base';
import { loadCorpusJsonl, loadQuestionsJsonl } from './loader';

export const SEARCH_QA_SPLIT_SEED = 'whale-search-qa-splits-v1';

const FILE_ROLES = {
  questions: 'question JSONL: {"question", "answer" | "answers", "id"?, "entity"?}',
  corpus: 'corpus JSONL: {"id" | "_id", "title"?, "text" | "contents"}',
};

/** Retrieval diagnostics: did any passage the episode retrieved contain a reference answer? */
function qaDiagnostics(index: Bm25Index) {
  return (task: EnvTask<QaReference>, state: QaState): Record<string, number | boolean> => {
    const answers = task.hidden.answers.map((a) => ` ${normalizeTextAnswer(a)} `);
    const retrieved = state.searches.flatMap((s) => s.docIds).map((id) => ` ${normalizeTextAnswer(index.get(id)?.text ?? '')} `);
    return { searches: state.searches.length, answerRetrieved: retrieved.some((d) => answers.some((a) => d.includes(a))), answered: state.answer !== null };
  };
}

const loadSynthetic = once((): DomainInstance<QaReference, QaState> => {
  const kb = generateKnowledgeBase();
  const index = new Bm25Index(renderCorpus(kb));
  const tasks = generateQuestions(kb);
  return buildInstance(createSearchQaEnvironment(index), tasks, SEARCH_QA_SPLIT_SEED, sizesOf({ kind: 'synthetic' }), [
    `synthetic: ${tasks.length} questions over ${index.size} documents`,
  ], qaDiagnostics(index));
});

function loadFiles(source: Extract<DomainSourceSpec, { kind: 'files' }>): DomainInstance<QaReference, QaState> {
  const qFile = requireFile('search-qa', source.files, 'questions', FILE_ROLES);
  const cFile = requireFile('search-qa', source.files, 'corpus', FILE_ROLES);
  const questions = loadQuestionsJsonl(qFile, { onMalformed: source.onMalformed, limit: source.maxTasks });
  const corpus = loadCorpusJsonl(cFile, { onMalformed: source.onMalformed });
  const index = new Bm25Index(corpus.items);
  return buildInstance(createSearchQaEnvironment(index), questions.items, source.splitSeed ?? SEARCH_QA_SPLIT_SEED, sizesOf(source), [
    describeLoad(qFile, questions),
    describeLoad(cFile, corpus),
  ], qaDiagnostics(index));
}

export const searchQaDomain: Domain<QaReference, QaState> = {
  name: 'search-qa',
  description: 'Question answering over a document collection with a BM25 search tool; normalised exact match.',
  fileRoles: FILE_ROLES,
  load: (source) => (source.kind === 'synthetic' ? loadSynthetic() : loadFiles(source)),
};
