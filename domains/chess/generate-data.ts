// Writes data/chess/synthetic-puzzles.jsonl from the seeded generator (about 7 minutes on one core: the
// mate-in-2 uniqueness search dominates). Run: npx tsx domains/chess/generate-data.ts
// The committed file is what the domain loads; tests/domains/chess-data.test.ts regenerates a sample of
// it and fails if the generator and the file disagree.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DEFAULT_CHESS_OPTIONS, generateSyntheticPuzzles } from './generator';
import { SYNTHETIC_PUZZLES_PATH, serializePuzzle } from './puzzle-file';

function main(): void {
  const total = DEFAULT_CHESS_OPTIONS.mateIn1 + DEFAULT_CHESS_OPTIONS.mateIn2;
  const started = Date.now();
  const puzzles = generateSyntheticPuzzles(DEFAULT_CHESS_OPTIONS, (done) => {
    if (done % 100 === 0) process.stderr.write(`${done}/${total} puzzles, ${Math.round((Date.now() - started) / 1000)} s\n`);
  });
  mkdirSync(dirname(SYNTHETIC_PUZZLES_PATH), { recursive: true });
  writeFileSync(SYNTHETIC_PUZZLES_PATH, puzzles.map(serializePuzzle).join('\n') + '\n');
  process.stderr.write(`wrote ${puzzles.length} puzzles to ${SYNTHETIC_PUZZLES_PATH}\n`);
}

main();
