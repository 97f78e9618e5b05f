// No import cycles in src/ (docs/architecture.md): follows every relative import, type-only
// ones included, and fails with the cycle it finds. The layer rules themselves are lint's.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { expect, it } from "vitest";

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === "gen" ? [] : sources(p);
    return p.endsWith(".ts") ? [p] : [];
  });
}

function importGraph(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const deps = [...readFileSync(file, "utf8").matchAll(/from\s+"(\.[^"]+)"/g)].map((m) => normalize(join(dirname(file), m[1]!)).replace(/\.js$/, ".ts"));
    graph.set(file, deps);
  }
  return graph;
}

export function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    state.set(node, "open");
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") return [...path.slice(path.indexOf(next)), next];
      if (state.get(next) === undefined) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    state.set(node, "done");
    return undefined;
  };
  for (const node of graph.keys()) {
    if (state.get(node) === undefined) {
      const found = visit(node);
      if (found) return found;
    }
  }
  return undefined;
}

it("finds a cycle when there is one (the check can fail)", () => {
  expect(findCycle(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]]]))).toEqual(["a", "b", "c", "a"]);
  expect(findCycle(new Map([["a", ["b"]], ["b", []]]))).toBeUndefined();
});

it("src/ has no import cycles", () => {
  expect(findCycle(importGraph(sources("src")))).toBeUndefined();
});
