// The search attributes a run mirrors at every decision, so `temporal workflow list -q` and `whale status`
// answer without a live worker. Fits the dev server's slots (10 Keyword, 3 Int, 3 Double).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const WhalePhase = defineSearchAttributeKey('WhalePhase', SearchAttributeType.KEYWORD);
export const WhaleMethod = defineSearchAttributeKey('WhaleMethod', SearchAttributeType.KEYWORD);
export const WhaleDomain = defineSearchAttributeKey('WhaleDomain', SearchAttributeType.KEYWORD);
export const WhaleRunState = defineSearchAttributeKey('WhaleRunState', SearchAttributeType.KEYWORD);
export const WhaleCycle = defineSearchAttributeKey('WhaleCycle', SearchAttributeType.INT);
export const WhaleStep = defineSearchAttributeKey('WhaleStep', SearchAttributeType.INT);
export const WhaleRollouts = defineSearchAttributeKey('WhaleRollouts', SearchAttributeType.INT);
export const WhaleBestScore = defineSearchAttributeKey('WhaleBestScore', SearchAttributeType.DOUBLE);
export const WhaleFinalScore = defineSearchAttributeKey('WhaleFinalScore', SearchAttributeType.DOUBLE);
export const WhaleTrainReward = defineSearchAttributeKey('WhaleTrainReward', SearchAttributeType.DOUBLE);

export const ALL_SEARCH_ATTRIBUTES = [
  WhalePhase, WhaleMethod, WhaleDomain, WhaleRunState,
  WhaleCycle, WhaleStep, WhaleRollouts,
  WhaleBestScore, WhaleFinalScore, WhaleTrainReward,
];

/** `Name=Type` pairs for `temporal server start-dev --search-attribute`. */
export function searchAttributeFlags(): string[] {
  const cli: Record<string, string> = { KEYWORD: 'Keyword', INT: 'Int', DOUBLE: 'Double' };
  return ALL_SEARCH_ATTRIBUTES.map((k) => `${k.name}=${cli[k.type]}`);
}
