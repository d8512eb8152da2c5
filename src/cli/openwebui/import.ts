import type { Parley } from '../../app.js';
import { detectVersion, type SourceVersion } from './versions.js';
import type { OpenWebuiSource, SourceRow } from './source.js';
import { type ImportContext, NOT_CARRIED_OVER, TABLE_IMPORTS, type TableImport, Unconvertible } from './tables.js';

/** Rows read and written per transaction. */
const PAGE_SIZE = 500;
/** A large table's progress is told every this many rows. */
const PROGRESS_EVERY = 10_000;

export interface ImportOptions {
  dryRun?: boolean;
  /** Open WebUI's uploads folder; by default `uploads` beside a SQLite source's file. */
  uploads?: string | null;
  log?: (line: string) => void;
}

/** One table's figures. */
export interface TableReport {
  table: string;
  target: string;
  /** Rows of the source this table takes. */
  source: number;
  /** Written by this run. */
  written: number;
  /** Present already (an earlier run): left as they are. */
  present: number;
  unconvertible: { id: string; reason: string }[];
  /** After the run: how many of the source's convertible rows Parley holds (null on a dry run). */
  verified: number | null;
  messages: number;
}

export interface ImportReport {
  version: SourceVersion;
  dryRun: boolean;
  tables: TableReport[];
  /** Source tables with rows this importer does not carry over. */
  notCarriedOver: { table: string; rows: number; reason: string }[];
  messages: number;
  seconds: number;
}

/** The target's ids among `ids`. */
async function presentIds(ctx: ImportContext, spec: TableImport, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const column = spec.targetId ?? 'id';
  const rows = await ctx.db
    .selectFrom(spec.target as 'user')
    .select(`${column} as id` as 'id')
    .where(column as 'id', 'in', ids)
    .execute();
  return new Set(rows.map((r) => String(r.id)));
}

const rowId = (row: SourceRow, key: string) => String(row.id ?? row[key] ?? '?');

/**
 * Reads an Open WebUI database and writes what it holds into Parley (docs/migrating-from-open-webui.md).
 * Each page is written in its own transaction and rows whose id Parley holds already are left
 * alone, so a second run changes nothing and an interrupted run resumes where it stopped.
 */
export async function importOpenWebui(source: OpenWebuiSource, parley: Parley, options: ImportOptions = {}): Promise<ImportReport> {
  const log = options.log ?? (() => undefined);
  const started = performance.now();
  // Before anything is written: an unsupported version stops here.
  const version = await detectVersion(source);
  log(`Open WebUI ${version.version} database (alembic revision ${version.revision}) at ${source.description}${options.dryRun ? ' — dry run, nothing is written' : ''}`);

  const tables = await source.tables();
  const ctx: ImportContext = {
    db: parley.core.db,
    dialect: parley.core.database.dialect,
    chats: parley.services.chats,
    settings: parley.core.settings,
    events: parley.services.events,
    files: parley.services.files,
    prompts: parley.services.prompts,
    automations: parley.services.automations,
    calendar: parley.services.calendar,
    uploads: options.uploads ?? source.uploads,
    now: parley.core.clock.now(),
    userIds: new Set((await parley.core.db.selectFrom('user').select('id').execute()).map((r) => r.id)),
    tagNames: new Map(),
    columns: new Set(),
  };
  if (tables.has('tag')) {
    for await (const page of source.pages('tag', 'id', 100_000)) {
      for (const row of page) ctx.tagNames.set(`${String(row.user_id)}\n${String(row.id)}`, String(row.name ?? row.id));
    }
  }

  const reports: TableReport[] = [];
  for (const spec of TABLE_IMPORTS) {
    if (!tables.has(spec.source)) continue;
    const key = spec.key ?? 'id';
    ctx.columns = await source.columns(spec.source);
    const report: TableReport = { table: spec.source, target: spec.target, source: 0, written: 0, present: 0, unconvertible: [], verified: null, messages: 0 };
    const tableStarted = performance.now();
    const total = await source.count(spec.source);
    let read = 0;
    for await (const page of source.pages(spec.source, ctx.columns.has(key) ? key : 'id', PAGE_SIZE)) {
      const records: { id: string }[] = [];
      for (const row of page) {
        if (spec.accepts && !spec.accepts(row, ctx)) continue;
        report.source += 1;
        try {
          records.push(...[spec.convert(row, ctx)].flat());
        } catch (error) {
          if (!(error instanceof Unconvertible)) throw error;
          report.unconvertible.push({ id: rowId(row, key), reason: error.message });
        }
      }
      const present = spec.present ? await spec.present(records, ctx) : await presentIds(ctx, spec, records.map((r) => r.id));
      const fresh = records.filter((r) => !present.has(r.id));
      report.present += present.size;
      if (fresh.length > 0 && !options.dryRun) {
        const refused = (await spec.write(fresh, ctx)) ?? [];
        report.unconvertible.push(...refused);
        report.written -= refused.length;
      }
      // A dry run counts what it would write; owners "written" let their rows convert too.
      if (options.dryRun && spec.source === 'user' && spec.target === 'user') for (const r of fresh) ctx.userIds.add(r.id);
      report.written += fresh.length;
      if (spec.messages) report.messages += fresh.reduce((sum, r) => sum + spec.messages!(r), 0);
      read += page.length;
      if (read < total && Math.floor(read / PROGRESS_EVERY) > Math.floor((read - page.length) / PROGRESS_EVERY)) {
        log(`${spec.source}: ${read} of ${total} rows read (${Math.round((read / total) * 100)}%)`);
      }
    }
    const label = spec.source === spec.target ? spec.source : `${spec.source} → ${spec.target}`;
    if (report.source > 0 || report.unconvertible.length > 0) {
      log(
        `${label}: ${report.source} rows, ${report.written} ${options.dryRun ? 'to write' : 'written'}, ${report.present} present, ${report.unconvertible.length} not convertible (${((performance.now() - tableStarted) / 1000).toFixed(1)} s)`,
      );
    }
    for (const item of report.unconvertible) log(`  ${label} ${item.id}: ${item.reason}`);
    reports.push(report);
  }

  const notCarriedOver: ImportReport['notCarriedOver'] = [];
  for (const [table, reason] of Object.entries(NOT_CARRIED_OVER)) {
    if (!tables.has(table)) continue;
    const rows = await source.count(table);
    if (rows === 0) continue;
    notCarriedOver.push({ table, rows, reason });
    log(`${table}: ${rows} rows not carried over: ${reason}`);
  }

  if (!options.dryRun) await verify(source, ctx, reports, log);
  const messages = reports.reduce((sum, r) => sum + r.messages, 0);
  return { version, dryRun: options.dryRun === true, tables: reports, notCarriedOver, messages, seconds: (performance.now() - started) / 1000 };
}

/** Reads the source's ids again and counts those Parley holds: every convertible row must be there. */
async function verify(source: OpenWebuiSource, ctx: ImportContext, reports: TableReport[], log: (line: string) => void): Promise<void> {
  for (const report of reports) {
    const spec = TABLE_IMPORTS.find((s) => s.source === report.table && s.target === report.target)!;
    ctx.columns = await source.columns(spec.source);
    const key = ctx.columns.has(spec.key ?? 'id') ? (spec.key ?? 'id') : 'id';
    const failed = new Set(report.unconvertible.map((u) => u.id));
    let expected = 0;
    let found = 0;
    for await (const page of source.pages(spec.source, key, PAGE_SIZE)) {
      const records: { id: string }[] = [];
      for (const row of page) {
        if (spec.accepts && !spec.accepts(row, ctx)) continue;
        try {
          records.push(...[spec.convert(row, ctx)].flat().filter((r) => !failed.has(r.id)));
        } catch {
          // Reported when converted.
        }
      }
      expected += records.length;
      found += (spec.present ? await spec.present(records, ctx) : await presentIds(ctx, spec, records.map((r) => r.id))).size;
    }
    report.verified = found;
    if (report.source === 0) continue;
    const label = spec.source === spec.target ? spec.source : `${spec.source} → ${spec.target}`;
    log(`verify ${label}: ${found} of ${expected} convertible rows in Parley${found === expected ? '' : ' — MISSING ROWS'}`);
  }
}
