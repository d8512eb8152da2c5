import { randomUUID } from 'node:crypto';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, HttpError, forbidden, notFound } from '../../core/http/errors.js';
import { Recurrence, RecurrenceError } from '../../core/scheduler/recurrence.js';
import type { FoldersService } from '../folders/service.js';
import type { UsersService } from '../users/service.js';
import type { AutomationRunner } from './runner.js';
import type { AutomationForm, AutomationListQuery, AutomationResponse, AutomationRunsQuery } from './schemas.js';
import { type AutomationRecord, type AutomationRunRecord, AutomationStore } from './store.js';

/** The scheduler's kind for automation runs; the key is the automation's id. */
export const AUTOMATION_JOB = 'automation';
const PAGE_ITEM_COUNT = 30;
/** Occurrences a single automation's view previews. */
const PREVIEW_RUNS = 5;
const NS_PER_MS = 1_000_000;

/** The reference's messages (constants.py), sent with 422 as issue 21 asks (the reference answers 400/403). */
const AUTOMATION_ERROR = {
  LIMIT_EXCEEDED: (max: number) => `Automation limit reached (${max})`,
  TOO_FREQUENT: (seconds: number) => `Schedule too frequent. Minimum interval is ${seconds} seconds.`,
  NO_FUTURE_RUNS: 'RRULE has no future occurrences',
  FOLDER_NOT_FOUND: 'Folder not found',
};
const invalid = (detail: string) => new HttpError(422, detail);

/**
 * Automations (`/api/v1/automations`, routers/automations.py): a prompt run on
 * an RRULE schedule as its owner. Their schedule is the core scheduler's
 * (kind `automation`), evaluated in the owner's time zone; a run is
 * AutomationRunner's. See docs/automations.md.
 */
export class AutomationsService {
  /** Runs started by "run now", awaited on shutdown. */
  private readonly manualRuns = new Set<Promise<unknown>>();

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly folders: FoldersService,
    private readonly users: UsersService,
    private readonly runner: AutomationRunner,
  ) {
    core.scheduler.handle(AUTOMATION_JOB, {
      enabled: () => this.core.settings.get<boolean>('automations.enable') === true,
      run: async ({ key }) => {
        const automation = await this.store().byId(key);
        if (automation?.is_active) await this.runner.run(automation);
      },
    });
  }

  private store(): AutomationStore {
    return new AutomationStore(this.core.db);
  }

  private nowNs(): number {
    return this.core.clock.nowMs() * NS_PER_MS;
  }

  /** check_automations_permission: the feature off, or no `features.automations`: 403. */
  private async requireFeature(user: UserRecord): Promise<void> {
    if (!this.core.settings.get<boolean>('automations.enable')) throw forbidden(ERROR.UNAUTHORIZED);
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'features.automations'))) throw forbidden(ERROR.UNAUTHORIZED);
  }

  /** check_automation_access: someone else's automation is 403 unless admin; none is 404. */
  private async owned(user: UserRecord, id: string): Promise<AutomationRecord> {
    await this.requireFeature(user);
    const automation = await this.store().byId(id);
    if (!automation) throw notFound(ERROR.NOT_FOUND);
    if (!isAdmin(user) && automation.user_id !== user.id) throw forbidden(ERROR.UNAUTHORIZED);
    return automation;
  }

  /**
   * The form's rule, time zone, limits and folder, checked before anything is
   * stored. Admins bypass the limits (check_automation_limits).
   */
  private async checkForm(user: UserRecord, form: AutomationForm, creating: boolean): Promise<Recurrence> {
    let rule: Recurrence;
    try {
      rule = Recurrence.parse(form.data.rrule, user.timezone);
    } catch (error) {
      if (error instanceof RecurrenceError) throw invalid(error.message);
      throw error;
    }
    const now = this.core.clock.nowMs();
    if (rule.next(now) === null) throw invalid(AUTOMATION_ERROR.NO_FUTURE_RUNS);
    if (!isAdmin(user)) {
      const maxCount = positive(this.core.settings.get('automations.max_count'));
      if (creating && maxCount !== null && (await this.store().countOf(user.id)) >= maxCount) throw invalid(AUTOMATION_ERROR.LIMIT_EXCEEDED(maxCount));
      const minInterval = positive(this.core.settings.get('automations.min_interval'));
      const interval = minInterval === null ? null : rule.intervalSeconds(now);
      if (minInterval !== null && interval !== null && interval < minInterval) throw invalid(AUTOMATION_ERROR.TOO_FREQUENT(minInterval));
    }
    if (form.folder_id && !(await this.folders.canFileIn(user, form.folder_id))) throw invalid(AUTOMATION_ERROR.FOLDER_NOT_FOUND);
    return rule;
  }

  /** Puts the automation's schedule in the scheduler (or takes it out when paused). */
  private async plan(automation: AutomationRecord, timezone: string | null): Promise<void> {
    if (automation.is_active) await this.core.scheduler.schedule(AUTOMATION_JOB, automation.id, { rule: automation.data.rrule, timezone });
    else await this.core.scheduler.unschedule(AUTOMATION_JOB, automation.id);
  }

  private async responses(automations: AutomationRecord[], preview: { timezone: string | null } | null): Promise<AutomationResponse[]> {
    const ids = automations.map((a) => a.id);
    const [nextRuns, latest] = await Promise.all([this.core.scheduler.nextRuns(AUTOMATION_JOB, ids), this.store().latestRuns(ids)]);
    const now = this.core.clock.nowMs();
    return automations.map((automation) => {
      const next = nextRuns.get(automation.id) ?? null;
      const response: AutomationResponse = { ...automation, next_run_at: automation.is_active && next !== null ? next * NS_PER_MS : null, last_run: latest.get(automation.id) ?? null };
      if (preview) response.next_runs = previewRuns(automation.data.rrule, preview.timezone, now);
      return response;
    });
  }

  private async response(automation: AutomationRecord, user: UserRecord): Promise<AutomationResponse> {
    return (await this.responses([automation], { timezone: await this.ownerTimezone(automation, user) }))[0];
  }

  private publish(user: UserRecord, event: string, automation: AutomationRecord, data: Record<string, unknown>) {
    return this.core.events.publish({ event, actor: user, subjectId: automation.id, subjectType: 'automation', data: { name: automation.name, ...data } });
  }

  /** `GET /list`: a page of 30 of the user's own, with each one's latest run. */
  async list(user: UserRecord, query: AutomationListQuery): Promise<{ items: AutomationResponse[]; total: number }> {
    await this.requireFeature(user);
    const page = Math.max(1, query.page ?? 1);
    const { items, total } = await this.store().search(user.id, { query: query.query, status: query.status }, (page - 1) * PAGE_ITEM_COUNT, PAGE_ITEM_COUNT);
    return { items: await this.responses(items, null), total };
  }

  /** `POST /create`. */
  async create(user: UserRecord, form: AutomationForm): Promise<AutomationResponse> {
    await this.requireFeature(user);
    await this.checkForm(user, form, true);
    const now = this.nowNs();
    const automation: AutomationRecord = {
      id: randomUUID(),
      user_id: user.id,
      name: form.name,
      data: form.data,
      meta: form.meta ?? null,
      folder_id: form.folder_id ?? null,
      is_active: form.is_active ?? true,
      last_run_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.store().insert(automation);
    await this.plan(automation, user.timezone);
    await this.publish(user, 'automation.created', automation, { is_active: automation.is_active });
    return this.response(automation, user);
  }

  /**
   * Automations carried over from an Open WebUI database (`parley import-openwebui`), ids and
   * times kept; the active ones are scheduled in their owner's time zone from now on (before
   * the row is written, so an interrupted import, run again, leaves none unscheduled).
   */
  async restore(automations: AutomationRecord[]): Promise<void> {
    for (const automation of automations) {
      await this.plan(automation, (await this.users.byId(automation.user_id))?.timezone ?? null);
      await this.store().insert(automation);
    }
  }

  /** `GET /{id}`. */
  async get(user: UserRecord, id: string): Promise<AutomationResponse> {
    return this.response(await this.owned(user, id), user);
  }

  /** `POST /{id}/update`: the whole form again; the schedule restarts from now. */
  async update(user: UserRecord, id: string, form: AutomationForm): Promise<AutomationResponse> {
    const current = await this.owned(user, id);
    await this.checkForm(user, form, false);
    const fields = { name: form.name, data: form.data, meta: form.meta ?? null, folder_id: form.folder_id ?? null, is_active: form.is_active ?? current.is_active };
    const now = this.nowNs();
    await this.store().update(id, fields, now);
    const updated = { ...current, ...fields, updated_at: now };
    await this.plan(updated, await this.ownerTimezone(updated, user));
    await this.publish(user, 'automation.updated', updated, { is_active: updated.is_active });
    return this.response(updated, user);
  }

  /** `POST /{id}/toggle`: paused ones leave the scheduler; resumed ones are planned from now. */
  async toggle(user: UserRecord, id: string): Promise<AutomationResponse> {
    const current = await this.owned(user, id);
    const now = this.nowNs();
    const toggled = { ...current, is_active: !current.is_active, updated_at: now };
    await this.store().update(id, { is_active: toggled.is_active }, now);
    await this.plan(toggled, await this.ownerTimezone(toggled, user));
    await this.publish(user, toggled.is_active ? 'automation.enabled' : 'automation.disabled', toggled, {});
    return this.response(toggled, user);
  }

  /** `POST /{id}/run`: runs now, in the background (the answer does not wait for the model); the schedule is unchanged. */
  async runNow(user: UserRecord, id: string): Promise<AutomationResponse> {
    const automation = await this.owned(user, id);
    const run = this.runner.run(automation).catch((error) => this.core.log.error({ err: error, automation: id }, 'automation run failed'));
    this.manualRuns.add(run);
    void run.finally(() => this.manualRuns.delete(run));
    await this.publish(user, 'automation.run_started', automation, {});
    return this.response(automation, user);
  }

  /** `DELETE /{id}/delete`: the automation, its runs and its schedule. */
  async delete(user: UserRecord, id: string): Promise<boolean> {
    const automation = await this.owned(user, id);
    await this.core.scheduler.unschedule(AUTOMATION_JOB, id);
    const deleted = await this.store().delete(id);
    if (deleted) await this.publish(user, 'automation.deleted', automation, {});
    return deleted;
  }

  /** `GET /{id}/runs`: newest first. */
  async runs(user: UserRecord, id: string, query: AutomationRunsQuery): Promise<AutomationRunRecord[]> {
    await this.owned(user, id);
    return this.store().runs(id, query.skip ?? 0, query.limit ?? 50);
  }

  /** Whether the user may use automations (the calendar shows their schedule then), without refusing. */
  async available(user: UserRecord): Promise<boolean> {
    if (!this.core.settings.get<boolean>('automations.enable')) return false;
    return isAdmin(user) || this.access.hasPermission(user, 'features.automations');
  }

  /**
   * The user's schedule in [startMs, endMs) for the calendar's "Scheduled Tasks"
   * view: the upcoming runs of active automations (from now on, in the user's
   * zone) and the runs recorded in the range.
   */
  async calendarEntries(user: UserRecord, startMs: number, endMs: number, limit: number): Promise<{ upcoming: { automation: AutomationRecord; at: number }[]; runs: { run: AutomationRunRecord; automation: AutomationRecord }[] }> {
    const store = this.store();
    const now = this.core.clock.nowMs();
    const upcoming: { automation: AutomationRecord; at: number }[] = [];
    const active = await store.activeOf(user.id);
    const nextRuns = await this.core.scheduler.nextRuns(AUTOMATION_JOB, active.map((a) => a.id));
    for (const automation of active) {
      try {
        const rule = Recurrence.parse(automation.data.rrule, user.timezone);
        // Anchored at the planned next run, as the scheduler counts.
        for (const at of rule.between(Math.max(startMs, now), endMs, nextRuns.get(automation.id) ?? now, limit)) upcoming.push({ automation, at });
      } catch {
        // A stored rule that no longer parses shows no upcoming runs.
      }
    }
    return { upcoming, runs: await store.runsInRange(user.id, startMs * NS_PER_MS, endMs * NS_PER_MS, limit) };
  }

  /** Runs started by "run now" end before the database closes. */
  async close(): Promise<void> {
    await Promise.all(this.manualRuns);
  }

  /** Schedules are the owner's clock, also when an admin edits them. */
  private async ownerTimezone(automation: AutomationRecord, user: UserRecord): Promise<string | null> {
    if (automation.user_id === user.id) return user.timezone;
    return (await this.users.byId(automation.user_id))?.timezone ?? null;
  }
}

function positive(value: unknown): number | null {
  const number = typeof value === 'number' ? value : Number.parseInt(String(value ?? ''), 10);
  return Number.isFinite(number) && number > 0 ? number : null;
}

/** The next occurrences in nanoseconds; a stored rule that no longer parses previews nothing. */
function previewRuns(rule: string, timezone: string | null, now: number): number[] {
  try {
    return Recurrence.parse(rule, timezone).upcoming(now, PREVIEW_RUNS).map((ms) => ms * NS_PER_MS);
  } catch {
    return [];
  }
}
