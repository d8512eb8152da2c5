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

/** Each cycle of a graph found by a depth-first walk, as `a → b → a` (at least one per cycle there is). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (node: string, trail: string[]): void => {
    if (state.get(node) === 'done') return;
    if (state.get(node) === 'open') {
      found.push([...trail.slice(trail.indexOf(node)), node].join(' → '));
      return;
    }
    state.set(node, 'open');
    for (const next of graph.get(node) ?? []) if (graph.has(next)) visit(next, [...trail, node]);
    state.set(node, 'done');
  };
  for (const node of graph.keys()) visit(node, []);
  return found;
}

describe('source layout', () => {
  it('has core import no area', () => {
    const found = [...imports].flatMap(([file, targets]) => (file.startsWith('core/') ? targets.filter((t) => t.startsWith('areas/')).map((t) => `${file} → ${t}`) : []));
    expect(found).toEqual([]);
  });

  it('has no area import the composition root', () => {
    const found = [...imports].flatMap(([file, targets]) => (file.startsWith('areas/') && targets.includes('app.ts') ? [file] : []));
    expect(found).toEqual([]);
  });

  it('has no import cycle between files, nor between areas', () => {
    const areaOf = (file: string) => (file.startsWith('areas/') ? file.split('/')[1] : null);
    const areaImports = new Map<string, string[]>();
    for (const [file, targets] of imports) {
      const area = areaOf(file);
      if (!area) continue;
      const others = targets.map(areaOf).filter((other): other is string => other !== null && other !== area);
      areaImports.set(area, [...new Set([...(areaImports.get(area) ?? []), ...others])]);
    }
    expect(cycles(imports)).toEqual([]);
    expect(cycles(areaImports)).toEqual([]);
  });
});
