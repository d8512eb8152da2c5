import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Folders that exist on one machine only: a checkout's own location, a user's home, the
 * workspace this project was built in. Generic placeholders (`/home/user/`, `/home/<you>/`)
 * are fine; so are system paths every machine has (`/usr/`, `/tmp/`, `/etc/`).
 */
const MACHINE_PATH = /(?<![\w.~$/-])\/(?:work|root|home\/(?!user\/|<)[\w.-]+|Users\/(?!<)[\w.-]+)\//;

/** Third-party documents kept byte for byte (the recall bench's corpus): their examples name their authors' folders. */
const THIRD_PARTY = 'bench/corpus/';

/** Every committed file that is text (no NUL byte in it), but third-party documents. */
function committedTextFiles(): { name: string; text: string }[] {
  const names = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((name) => name && !name.startsWith(THIRD_PARTY));
  return names
    .map((name) => ({ name, bytes: readFileSync(path.join(ROOT, name)) }))
    .filter(({ bytes }) => !bytes.includes(0))
    .map(({ name, bytes }) => ({ name, text: bytes.toString('utf8') }));
}

describe('the repository', () => {
  it('names no folder of one machine in any committed text file (docs, code, tests, scripts)', () => {
    const found = committedTextFiles().flatMap(({ name, text }) =>
      text.split('\n').flatMap((line, index) => (MACHINE_PATH.test(line) ? [`${name}:${index + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });

  it('the check itself finds such paths and lets generic ones pass', () => {
    // Made from parts, so that this file does not hold what it looks for.
    const machinePaths = [['work', 'main', 'docs'], ['root', '.cache'], ['home', 'alice', 'parley'], ['Users', 'bob', 'src']];
    for (const parts of machinePaths) expect(`see /${parts.join('/')}`).toMatch(MACHINE_PATH);
    for (const line of ['/home/user/parley', '/home/<you>/parley', '/usr/include/node', 'https://example.com/work/x', '~/work/x', 'src/work/x']) {
      expect(line).not.toMatch(MACHINE_PATH);
    }
  });
});
