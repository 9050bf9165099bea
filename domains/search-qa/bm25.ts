// The search tool's index: real BM25 ranking (minisearch) over a document corpus. Exact terms only
// (no prefix or fuzzy matching) so ranking is plain BM25; query rewriting is a harness lever.
import MiniSearch from 'minisearch';
import type { CorpusDoc } from './corpus';

export interface SearchHit {
  id: string;
  title: string;
  text: string;
  score: number;
}

// Function words carry no BM25 signal and, matching every document, make an OR query scan the whole
// index (7 ms instead of well under 1 ms per query on the synthetic corpus); standard BM25 set-ups drop them.
const STOPWORDS = new Set(
  'a an the is are was were be of in on at to by for and or it its this that what which who whom whose where when how did does do'.split(' '),
);

export class Bm25Index {
  private readonly search: MiniSearch<CorpusDoc>;
  private readonly byId = new Map<string, CorpusDoc>();
  // The 8 samples of a prompt often send the same query; a bounded memo skips re-ranking them.
  private readonly memo = new Map<string, SearchHit[]>();
  private static readonly MEMO_LIMIT = 4096;

  constructor(docs: readonly CorpusDoc[]) {
    this.search = new MiniSearch<CorpusDoc>({
      fields: ['title', 'text'],
      idField: 'id',
      processTerm: (term) => {
        const t = term.toLowerCase();
        return STOPWORDS.has(t) ? null : t;
      },
      searchOptions: { boost: { title: 2 }, prefix: false, fuzzy: false, combineWith: 'OR' },
    });
    for (const d of docs) {
      if (this.byId.has(d.id)) throw new Error(`Bm25Index: duplicate document id "${d.id}"; corpus ids must be unique`);
      this.byId.set(d.id, d);
    }
    this.search.addAll(docs as CorpusDoc[]);
  }

  get size(): number {
    return this.byId.size;
  }

  /** Top-k documents for a free-text query, best first; ties broken by id so results are stable. */
  query(query: string, k: number): SearchHit[] {
    if (!Number.isInteger(k) || k < 1) throw new Error(`Bm25Index.query: k must be a positive integer, got ${k}`);
    if (query.trim() === '') return [];
    const key = `${k}\u0000${query}`;
    const cached = this.memo.get(key);
    if (cached) return cached.map((h) => ({ ...h }));
    const results = this.search.search(query);
    results.sort((a, b) => b.score - a.score || (String(a.id) < String(b.id) ? -1 : 1));
    const hits = results.slice(0, k).map((r) => {
      const d = this.byId.get(String(r.id));
      if (!d) throw new Error(`Bm25Index: index returned unknown id ${String(r.id)}`);
      return { id: d.id, title: d.title, text: d.text, score: r.score };
    });
    if (this.memo.size >= Bm25Index.MEMO_LIMIT) this.memo.clear();
    this.memo.set(key, hits);
    return hits.map((h) => ({ ...h }));
  }

  get(id: string): CorpusDoc | undefined {
    return this.byId.get(id);
  }
}
