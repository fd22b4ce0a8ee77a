import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import ts from 'typescript';

/**
 * The service's own modules import one another without a cycle (STYLE.md: types that make import
 * cycles have a home of their own). Every import counts, `import type` and `export … from`
 * included: a type-only cycle still ties two modules' designs together.
 */

const ROOT = path.resolve(__dirname, '../..');
const FOLDERS = ['api', 'shared', 'workers', 'bin'];

function sourceFiles(folder: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(folder)) {
    const full = path.join(folder, name);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(full));
    else if (/\.ts$/.test(name) && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** The file a relative specifier names (`./x` → `x.ts` or `x/index.ts`), or null for a package or a non-TypeScript file. */
function resolve(from: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), specifier);
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (candidate.endsWith('.ts') && existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

/** Every module's imports of the service's own modules, type-only ones and re-exports included. */
export function importGraph(folders: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of folders.flatMap((folder) => sourceFiles(path.join(ROOT, folder)))) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    graph.set(file, [...new Set(importedFiles.map((imported) => resolve(file, imported.fileName)).filter((found): found is string => found !== null))]);
  }
  return graph;
}

/** The strongly connected components with more than one module, or one that imports itself (Tarjan's algorithm). */
export function cyclesOf(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) cycles.push(component.map((file) => path.relative(ROOT, file)).sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

describe('imports among api/, shared/, workers/ and bin/', () => {
  it('make no cycle, type-only imports counted', () => {
    const graph = importGraph(FOLDERS);
    expect(graph.size).to.be.greaterThan(100);
    const cycles = cyclesOf(graph);
    expect(cycles, cycles.map((cycle) => cycle.join(' ↔ ')).join('\n')).to.deep.equal([]);
  });

  it('finds a cycle made only of type imports', () => {
    // The walker itself: two modules that import each other's types are a cycle.
    const a = path.join(ROOT, 'a.ts');
    const b = path.join(ROOT, 'b.ts');
    expect(cyclesOf(new Map([[a, [b]], [b, [a]]]))).to.deep.equal([['a.ts', 'b.ts']]);
    const { importedFiles } = ts.preProcessFile("import type { X } from './b';\nexport type { Y } from './c';", true, true);
    expect(importedFiles.map((imported) => imported.fileName)).to.deep.equal(['./b', './c']);
  });
});
