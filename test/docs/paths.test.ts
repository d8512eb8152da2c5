import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** An absolute path of one machine's home or work folders (an API path such as `/scim/v2/Users/` is not one). */
const MACHINE_PATH = /(?<![\w.~/-])\/(?:work|root|home|Users)\/[\w.+-]/;

describe('the repository', () => {
  it('holds no machine-specific absolute path in any tracked file', () => {
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
    expect(files.length).toBeGreaterThan(100);
    const found: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = readFileSync(path.join(ROOT, file), 'utf8');
      } catch {
        continue; // listed but absent (a deleted file not yet committed)
      }
      text.split('\n').forEach((line, index) => {
        if (MACHINE_PATH.test(line)) found.push(`${file}:${index + 1}: ${line.trim().slice(0, 120)}`);
      });
    }
    expect(found).toEqual([]);
  });
});
