import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/** The dependency direction of docs/architecture.md ("Layout and dependency direction"), read from the sources. */
const src = path.resolve(import.meta.dirname, '../../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Every file's relative imports (type-only ones too), as paths relative to src. */
const imports = new Map(
  sourceFiles(src).map((file) => {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/^\s*(?:import|export)\b[^'";]*?\bfrom\s*'(\.[^']+)'/gm)].map((match) =>
      path.relative(src, path.resolve(path.dirname(file), match[1])).replace(/\.js$/, '.ts'),
    );
    return [path.relative(src, file), targets] as const;
  }),
);

describe('source layout', () => {
  it('has core import no area', () => {
    const found = [...imports].flatMap(([file, targets]) => (file.startsWith('core/') ? targets.filter((t) => t.startsWith('areas/')).map((t) => `${file} → ${t}`) : []));
    expect(found).toEqual([]);
  });

  it('has no area import the composition root', () => {
    const found = [...imports].flatMap(([file, targets]) => (file.startsWith('areas/') && targets.includes('app.ts') ? [file] : []));
    expect(found).toEqual([]);
  });

  it('has no import cycle', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, trail: string[]): void => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        cycles.push([...trail.slice(trail.indexOf(file)), file].join(' → '));
        return;
      }
      state.set(file, 'open');
      for (const target of imports.get(file) ?? []) if (imports.has(target)) visit(target, [...trail, file]);
      state.set(file, 'done');
    };
    for (const file of imports.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });
});
