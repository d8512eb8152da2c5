import { cosine } from '../../core/retrieval/store.js';

/**
 * The arena leaderboard (routers/evaluations.py): Elo ratings over the pairwise
 * outcomes the feedbacks record. A feedback rating its answer 1 (won) or -1
 * (lost) is one match against each sibling model; other ratings are not
 * matches. Every model starts at 1000 and moves by K = 32 times the surprise of
 * the outcome, times the feedback's weight (1, or its similarity to a search
 * query). There are no ties: a rating of 0 counts for nothing, as the reference.
 */
type Json = Record<string, unknown>;

export interface RatedFeedback {
  id: string;
  data: Json | null;
}

export interface ModelStanding {
  rating: number;
  won: number;
  lost: number;
}

export const INITIAL_RATING = 1000;
export const K_FACTOR = 32;

const tagsOf = (data: Json | null): string[] => (Array.isArray(data?.tags) ? data.tags.filter((t): t is string => typeof t === 'string') : []);

/** The outcome of a feedback: the rated model, whether it won, and its opponents; null when it is no match. */
function matchOf(data: Json | null): { modelId: string; won: boolean; opponents: string[] } | null {
  const modelId = data?.model_id;
  const rating = String(data?.rating ?? '');
  if (typeof modelId !== 'string' || !modelId || (rating !== '1' && rating !== '-1')) return null;
  const opponents = Array.isArray(data?.sibling_model_ids) ? data.sibling_model_ids.filter((m): m is string => typeof m === 'string') : [];
  return { modelId, won: rating === '1', opponents };
}

/** Ratings, wins and losses per model, in the order the feedbacks are given. */
export function eloStandings(feedbacks: RatedFeedback[], weights?: Map<string, number>): Map<string, ModelStanding> {
  const standings = new Map<string, ModelStanding>();
  const standing = (id: string) => {
    let found = standings.get(id);
    if (!found) standings.set(id, (found = { rating: INITIAL_RATING, won: 0, lost: 0 }));
    return found;
  };
  for (const feedback of feedbacks) {
    const match = matchOf(feedback.data);
    if (!match) continue;
    const weight = weights ? (weights.get(feedback.id) ?? 1) : 1;
    for (const opponentId of match.opponents) {
      const model = standing(match.modelId);
      const opponent = standing(opponentId);
      const expected = 1 / (1 + 10 ** ((opponent.rating - model.rating) / 400));
      const score = match.won ? 1 : 0;
      model.rating += K_FACTOR * (score - expected) * weight;
      opponent.rating += K_FACTOR * (1 - score - (1 - expected)) * weight;
      if (match.won) {
        model.won++;
        opponent.lost++;
      } else {
        model.lost++;
        opponent.won++;
      }
    }
  }
  return standings;
}

/** The most frequent tags of each rated model's feedbacks (at most `limit`, most frequent first). */
export function topTags(feedbacks: RatedFeedback[], limit = 5): Map<string, { tag: string; count: number }[]> {
  const counts = new Map<string, Map<string, number>>();
  for (const { data } of feedbacks) {
    const modelId = data?.model_id;
    if (typeof modelId !== 'string' || !modelId) continue;
    const tags = counts.get(modelId) ?? new Map<string, number>();
    for (const tag of tagsOf(data)) tags.set(tag, (tags.get(tag) ?? 0) + 1);
    counts.set(modelId, tags);
  }
  return new Map(
    [...counts].map(([modelId, tags]) => [
      modelId,
      [...tags]
        .sort((a, b) => b[1] - a[1])
        .slice(0, limit)
        .map(([tag, count]) => ({ tag, count })),
    ]),
  );
}

/** Every distinct tag of the feedbacks. */
export function allTags(feedbacks: RatedFeedback[]): string[] {
  return [...new Set(feedbacks.flatMap((f) => tagsOf(f.data)))];
}

/** Each feedback's weight for a query: the best similarity of its tags to the query (0 without tags). */
export function queryWeights(feedbacks: RatedFeedback[], tags: string[], tagVectors: Float32Array[], queryVector: Float32Array): Map<string, number> {
  const similarity = new Map(tags.map((tag, i) => [tag, cosine(tagVectors[i]!, queryVector)]));
  return new Map(
    feedbacks.map((f) => {
      const scores = tagsOf(f.data).map((tag) => similarity.get(tag) ?? 0);
      return [f.id, scores.length > 0 ? Math.max(...scores) : 0];
    }),
  );
}
