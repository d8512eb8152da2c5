import { CommandError } from '../command-error.js';
import type { OpenWebuiSource } from './source.js';

/**
 * Open WebUI's alembic revisions (backend/open_webui/migrations/versions), oldest
 * first, each with the release whose database it first marks. Databases of 0.6.0
 * to 0.10.2 end at one of these from 3781e22d8b01 on; anything else is refused
 * before a row is written.
 */
const REVISIONS: [revision: string, version: string][] = [
  ['7e5b5dc7342b', '0.3.17'],
  ['ca81bd47c050', '0.3.17'],
  ['c0fbf31ca0db', '0.3.30'],
  ['6a39f3d8e55c', '0.3.30'],
  ['242a2047eae0', '0.3.32'],
  ['1af9b942657b', '0.3.32'],
  ['3ab32c4b8f59', '0.3.32'],
  ['c69f45358db4', '0.3.32'],
  ['c29facfe716b', '0.3.32'],
  ['af906e964978', '0.3.32'],
  ['4ace53fd72c8', '0.3.33'],
  ['922e7a387820', '0.3.35'],
  ['57c599a3cb57', '0.5.0'],
  ['7826ab40b532', '0.5.0'],
  ['3781e22d8b01', '0.6.0'],
  ['9f0c9cd09105', '0.6.6'],
  ['d31026856c01', '0.6.16'],
  ['018012973d35', '0.6.22'],
  ['3af16a1c9fb6', '0.6.22'],
  ['38d63c18f30f', '0.6.26'],
  ['a5c220713937', '0.6.31'],
  ['37f288994c47', '0.6.36'],
  ['2f1211949ecc', '0.6.40'],
  ['b10670c03dd5', '0.6.40'],
  ['90ef40d4714e', '0.6.40'],
  ['3e0e00844bb0', '0.6.40'],
  ['6283dc0e4d8d', '0.6.41'],
  ['81cc2ce44d79', '0.6.41'],
  ['c440947495f3', '0.6.41'],
  ['374d2f66af06', '0.7.2'],
  ['8452d01d26d7', '0.7.2'],
  ['f1e2d3c4b5a6', '0.7.2'],
  ['a1b2c3d4e5f6', '0.8.0'],
  ['b2c3d4e5f6a7', '0.8.1'],
  ['a3dd5bedd151', '0.8.12'],
  ['d4e5f6a7b8c9', '0.8.12'],
  ['b7c8d9e0f1a2', '0.8.12'],
  ['e1f2a3b4c5d6', '0.8.12'],
  ['c1d2e3f4a5b6', '0.8.12'],
  ['56359461a091', '0.9.0'],
  ['4de81c2a3af1', '0.9.2'],
  ['a0b1c2d3e4f5', '0.9.2'],
  ['3c9b0ca343fd', '0.9.5'],
  ['461111b60977', '0.9.5'],
  ['3ff2c63645b8', '0.9.6'],
  ['4c5ce3d2f27f', '0.9.6'],
  ['7b3f2a9c1d4e', '0.9.6'],
  ['42e2978c7933', '0.10.2'],
];

const FIRST_SUPPORTED = REVISIONS.findIndex(([revision]) => revision === '3781e22d8b01');

export const NEWEST_REVISION = REVISIONS[REVISIONS.length - 1]![0];

export interface SourceVersion {
  revision: string;
  /** The release whose database first ends at this revision ("0.6.22"). */
  version: string;
  /** Position in the chain: later revisions have more columns and tables. */
  position: number;
}

/** Refused before anything is written. */
export class UnsupportedVersion extends CommandError {}

/** The source's version from its alembic_version row; refuses what this importer cannot read. */
export async function detectVersion(source: OpenWebuiSource): Promise<SourceVersion> {
  const tables = await source.tables();
  if (!tables.has('alembic_version')) {
    if (tables.has('migratehistory')) {
      throw new UnsupportedVersion('Found an Open WebUI database before 0.3.17 (peewee migrations only, no alembic_version): supported are 0.6 to 0.10; upgrade it with Open WebUI first');
    }
    throw new UnsupportedVersion(`${source.description} is not an Open WebUI database (no alembic_version table)`);
  }
  const revisions: string[] = [];
  for await (const page of source.pages('alembic_version', 'version_num', 100)) revisions.push(...page.map((row) => String(row.version_num)));
  if (revisions.length !== 1) throw new UnsupportedVersion(`Found ${revisions.length} alembic revisions (${revisions.join(', ') || 'none'}) in alembic_version: expected one`);
  const revision = revisions[0]!;
  const position = REVISIONS.findIndex(([known]) => known === revision);
  if (position < 0) {
    throw new UnsupportedVersion(`Found alembic revision ${revision}, which is no Open WebUI release up to 0.10.2 (newer, or a fork): supported are 0.6 to 0.10 (newest revision ${NEWEST_REVISION})`);
  }
  const version = REVISIONS[position]![1];
  if (position < FIRST_SUPPORTED) {
    throw new UnsupportedVersion(`Found Open WebUI ${version} (alembic revision ${revision}): supported are 0.6 to 0.10; upgrade it with Open WebUI first`);
  }
  return { revision, version, position };
}
