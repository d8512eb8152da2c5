import type { UserRecord } from '../../core/auth/user.js';
import { PluginError } from '../../core/python/errors.js';
import type { FunctionRunOptions, FunctionsService } from './service.js';
import type { FunctionRecord } from './store.js';

type Json = Record<string, unknown>;

export type FilterStage = 'inlet' | 'stream' | 'outlet';

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Strings of a list, or none. */
const ids = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

/**
 * Filter functions around a model call (utils/filter.py): which apply to a
 * model and request (global ones, the model's `meta.filterIds`, toggleable ones
 * only when the request's `filter_ids` names them), in the order of their
 * `priority` valve, then id; and running one stage of them over a body.
 */
export class ChatFilters {
  /** `priority` valve by function id and version (`updated_at` moves with the source and the valves). */
  private readonly priorities = new Map<string, number>();
  /** Stages a function version does not define: not asked again. */
  private readonly missing = new Set<string>();

  constructor(private readonly functions: FunctionsService) {}

  /** get_sorted_filter_ids: the filters applying to `model` (an `/api/models` entry) for a request enabling `enabledIds`. */
  async forModel(model: Json, enabledIds: unknown): Promise<FunctionRecord[]> {
    const active = await this.functions.active('filter');
    if (active.length === 0) return [];
    const info = isObject(model.info) ? model.info : {};
    const meta = isObject(info.meta) ? info.meta : {};
    const named = new Set([...active.filter((fn) => fn.is_global).map((fn) => fn.id), ...ids(meta.filterIds)]);
    const enabled = new Set(ids(enabledIds));
    const chosen = active.filter((fn) => named.has(fn.id) && (fn.meta.toggle !== true || enabled.has(fn.id)));
    const ranked = await Promise.all(chosen.map(async (fn) => ({ fn, priority: await this.priority(fn) })));
    return ranked.sort((a, b) => a.priority - b.priority || (a.fn.id < b.fn.id ? -1 : a.fn.id > b.fn.id ? 1 : 0)).map((r) => r.fn);
  }

  private async priority(fn: FunctionRecord): Promise<number> {
    const key = `${fn.id}:${fn.updated_at}`;
    let priority = this.priorities.get(key);
    if (priority === undefined) {
      priority = Number(await this.functions.run(fn, 'priority').catch(() => 0)) || 0;
      this.priorities.set(key, priority);
    }
    return priority;
  }

  /**
   * Runs one stage of every filter over `body`, each getting what the previous
   * returned (process_filter_functions). A filter without that stage is
   * skipped; one that raises fails the whole stage, as in the reference.
   */
  async apply(filters: FunctionRecord[], stage: FilterStage, body: Json, user: UserRecord, options: Omit<FunctionRunOptions, 'user' | 'body'> = {}): Promise<Json> {
    let current = body;
    for (const fn of filters) {
      const key = `${fn.id}:${fn.updated_at}:${stage}`;
      if (this.missing.has(key)) continue;
      try {
        const result = await this.functions.run<{ value: unknown }>(fn, stage, { ...options, user, body: current, functionExtras: { ...options.functionExtras, __id__: fn.id } });
        if (isObject(result.value)) current = result.value;
      } catch (error) {
        if (error instanceof PluginError && error.code === 'function_not_found') {
          this.missing.add(key);
          continue;
        }
        throw error;
      }
    }
    return current;
  }

  /** Whether any of `filters` may define `stage` (not yet known not to). */
  mayRun(filters: FunctionRecord[], stage: FilterStage): boolean {
    return filters.some((fn) => !this.missing.has(`${fn.id}:${fn.updated_at}:${stage}`));
  }
}
