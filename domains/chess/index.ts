// The chess puzzle domain: synthetic mate-in-1/2 puzzles with proven unique solutions (committed under
// data/chess/, regenerable by generate-data.ts), whole-line verification, and a Lichess CSV loader.
import type { Domain, DomainInstance, DomainSourceSpec, EnvTask } from '../types';
import { describeLoad } from '../common/line-loader';
import { buildInstance, once, requireFile, sizesOf } from '../common/instance';
import { createChessEnvironment, type ChessState } from './environment';
import { loadLichessCsv } from './lichess-loader';
import { loadSyntheticPuzzles, SYNTHETIC_PUZZLES_PATH } from './puzzle-file';
import { buildChessTask, type ChessReference } from './tasks';

export const CHESS_SPLIT_SEED = 'whale-chess-splits-v1';

const FILE_ROLES = { puzzles: 'Lichess puzzle CSV: PuzzleId,FEN,Moves,Rating,... (first move is the opponent\'s)' };

/** Line diagnostics: solver moves played, how many were right, and the outcome. */
function chessDiagnostics(task: EnvTask<ChessReference>, state: ChessState): Record<string, number | boolean> {
  const right = state.played.filter((m, i) => m === task.hidden.line[2 * i]).length;
  return { solverMoves: state.played.length, solverMovesOnLine: right, lineLength: Math.ceil(task.hidden.line.length / 2), solved: state.status === 'solved' };
}

const loadSynthetic = once((): DomainInstance<ChessReference, ChessState> => {
  const file = loadSyntheticPuzzles({ onMalformed: 'reject' });
  const tasks = file.items.map((p) => buildChessTask({ ...p, source: 'synthetic' }));
  return buildInstance(createChessEnvironment(), tasks, CHESS_SPLIT_SEED, sizesOf({ kind: 'synthetic' }), [describeLoad(SYNTHETIC_PUZZLES_PATH, file)], chessDiagnostics);
});

function loadFiles(source: Extract<DomainSourceSpec, { kind: 'files' }>): DomainInstance<ChessReference, ChessState> {
  const file = requireFile('chess', source.files, 'puzzles', FILE_ROLES);
  const puzzles = loadLichessCsv(file, { onMalformed: source.onMalformed, limit: source.maxTasks });
  return buildInstance(createChessEnvironment(), puzzles.items, source.splitSeed ?? CHESS_SPLIT_SEED, sizesOf(source), [describeLoad(file, puzzles)], chessDiagnostics);
}

export const chessDomain: Domain<ChessReference, ChessState> = {
  name: 'chess',
  description: 'Chess puzzles (mate-in-1/2 and tactics): play the whole solution line in UCI; a legal wrong move ends the episode.',
  fileRoles: FILE_ROLES,
  load: (source) => (source.kind === 'synthetic' ? loadSynthetic() : loadFiles(source)),
};
