import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest folder above this module with the plugin host, from src/, dist/ or the bundle alike. */
function repositoryRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'plugin-host', 'parley_host'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('plugin-host/ not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return dir;
}

const ROOT = repositoryRoot();

/** The Python package the workers run (`python -m parley_host`). */
export const PLUGIN_HOST_DIR = path.join(ROOT, 'plugin-host');

/** `PYTHON` when set; else the environment scripts/setup-python.sh makes; else `python3`. */
export function resolvePython(configured?: string | null): string {
  if (configured) return configured;
  const prepared = path.join(ROOT, '.venv-plugin-host', 'bin', 'python');
  return existsSync(prepared) ? prepared : 'python3';
}

/**
 * What tool code may see of the server's environment: where programs and the
 * home directory are, locale, time zone, temp dirs and the network's proxies and
 * CA bundles (tools fetch things, as they do under the reference). Nothing else:
 * secrets, database URLs and provider keys stay in Node.
 */
const SHARED_NAMES = new Set([
  'PATH',
  'HOME',
  'USER',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
  'TEMP',
  'TMP',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
]);

function shared(source: Record<string, string | undefined>, extraPrefixes: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (SHARED_NAMES.has(name) || name.startsWith('LC_') || extraPrefixes.some((prefix) => name.startsWith(prefix))) {
      out[name] = value;
    }
  }
  return out;
}

/** The whole environment of a worker: the shared names, the operator's extras, the host's own settings. */
export function workerEnvironment(
  source: Record<string, string | undefined>,
  extra: Record<string, string>,
): Record<string, string> {
  return {
    ...shared(source),
    ...extra,
    PYTHONPATH: PLUGIN_HOST_DIR,
    PYTHONUTF8: '1',
    PYTHONIOENCODING: 'utf-8',
    PYTHONUNBUFFERED: '1',
  };
}

/** pip also needs its own configuration (`PIP_*`: index URL, certificates, find-links). */
export function pipEnvironment(
  source: Record<string, string | undefined>,
  extra: Record<string, string>,
): Record<string, string> {
  return { ...shared(source, ['PIP_']), ...extra, PYTHONUTF8: '1', PYTHONIOENCODING: 'utf-8' };
}
