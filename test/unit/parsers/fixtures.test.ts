// The upstream parsers' test fixtures (test/fixtures/parsers/*.json: smg's crates/tool_parser
// and crates/reasoning_parser tests, vLLM's tests/reasoning and tests/tool_parsers), each run whole, one code point
// per delta, and in random-sized deltas: the whole-text answer must match the fixture, and
// every streamed run must fold to the same answer, with the OpenAI delta shape.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reasoningFormat, toolFormat } from "../../../src/parsers/registry.js";
import type { OutputParserOptions } from "../../../src/parsers/output-parser.js";
import type { ToolSpec } from "../../../src/parsers/types.js";
import { prng, randomChunks, singleChars, streamDeltas, streamed, whole } from "./run-parser.js";

interface Case {
  name: string;
  text: string;
  calls: { name: string; arguments: unknown }[];
  content: string | null;
  reasoning?: string | null;
  upstream_content?: string;
  /** Upstream's answer where the gateway deliberately differs (docs/tools.md, Tests); kept as a fact, not asserted. */
  upstream?: { calls: { name: string; arguments: unknown }[]; content: string | null };
  /** Why the gateway answers otherwise; required with `upstream`. */
  differs?: string;
  thinking?: boolean;
  tools?: ToolSpec[];
  parser?: string;
  reasoning_parser?: string;
}
interface FixtureFile {
  source: { repo: string; path: string; commit: string };
  parser?: string;
  reasoning_parser?: string;
  cases: Case[];
}

const DIR = "test/fixtures/parsers";
const files = readdirSync(DIR)
  .filter((f) => f.endsWith(".json"))
  .map((f) => [f, JSON.parse(readFileSync(join(DIR, f), "utf8")) as FixtureFile] as const);

function optionsFor(file: FixtureFile, c: Case): OutputParserOptions {
  const tool = c.parser ?? file.parser;
  const reasoning = c.reasoning_parser ?? file.reasoning_parser;
  const toolFmt = tool ? toolFormat(tool) : undefined;
  const reasoningFmt = reasoning ? reasoningFormat(reasoning) : undefined;
  if (tool && !toolFmt) throw new Error(`no tool parser ${tool}`);
  if (reasoning && !reasoningFmt) throw new Error(`no reasoning parser ${reasoning}`);
  return { toolFormat: toolFmt, reasoning: reasoningFmt, tools: c.tools ?? [], thinking: c.thinking };
}

it("ports at least 100 upstream cases, each file naming its source and commit", () => {
  expect(files.reduce((n, [, f]) => n + f.cases.length, 0)).toBeGreaterThanOrEqual(100);
  for (const [, f] of files) expect(f.source.commit).toMatch(/^[0-9a-f]{40}$/);
});

for (const [fileName, file] of files) {
  describe(fileName, () => {
    for (const c of file.cases) {
      it(c.name, () => {
        if (c.upstream !== undefined) expect(c.differs).toEqual(expect.any(String));
        const options = optionsFor(file, c);
        const got = whole(c.text, options);
        expect(got.toolCalls.map((t) => ({ name: t.function.name, arguments: JSON.parse(t.function.arguments) as unknown }))).toEqual(c.calls);
        expect(got.content).toBe(c.content);
        expect(got.reasoning).toBe(c.reasoning ?? null);
        if (c.upstream_content !== undefined) expect((got.content ?? "").startsWith(c.upstream_content)).toBe(true);

        expect(streamed(singleChars(c.text), options)).toEqual(got);
        const random = prng(c.text.length * 7919 + c.name.length);
        for (let run = 0; run < 20; run++) expect(streamed(randomChunks(c.text, random, 1 + (run % 12)), options)).toEqual(got);

        // OpenAI delta shape: a call's first delta carries id, type and name, the rest only arguments.
        const deltas = streamDeltas(randomChunks(c.text, random), options).flatMap((d) => d.toolCalls);
        const opened = new Set<number>();
        for (const d of deltas) {
          if (!opened.has(d.index)) {
            expect(d).toMatchObject({ id: expect.any(String), type: "function", function: { name: expect.any(String), arguments: "" } });
            opened.add(d.index);
          } else expect(Object.keys(d).sort()).toEqual(["function", "index"]);
        }
      });
    }
  });
}
