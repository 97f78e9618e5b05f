// The per-token verdicts of issues 28 and 29: the parsers' ratio is judged against 1.3x; the
// API ratios are reported (section 3b) without a verdict.
import { describe, expect, it } from "vitest";
import type { BenchResult } from "../../../bench/report.js";
import { PARSERS_BASELINE, PARSERS_CASE, type TokenCpuResult } from "../../../bench/token-cpu.js";
import { verdicts } from "../../../bench/verdicts.js";

function parsers(ratio: number): TokenCpuResult {
  return { cases: [], ratios: [{ id: "parsers", case: PARSERS_CASE, baseline: PARSERS_BASELINE, ratio }] };
}

const run = (extra: Partial<BenchResult>) => ({ machine: { nproc: 2 }, ...extra }) as unknown as BenchResult;

describe("parsers verdict", () => {
  it.each([
    [1.2, "1.20x", true],
    [1.3, "1.30x", true],
    [1.31, "1.31x", false],
  ])("ratio %s: %s, met %s", (ratio, value, met) => {
    expect(verdicts(run({ parsers: parsers(ratio) })).find((v) => v.id === "ratio-parsers")).toMatchObject({ value, met });
  });

  it("is not measured when the run has no parsers phase", () => {
    expect(verdicts(run({})).find((v) => v.id === "ratio-parsers")).toMatchObject({ value: "n/a", met: undefined });
  });

  it("gives the API ratios no verdict", () => {
    const apis: TokenCpuResult = { cases: [], ratios: [{ id: "responses-http", case: "/v1/responses stream, openai-http", baseline: "/v1/chat/completions stream, openai-http", ratio: 1.4 }] };
    expect(verdicts(run({ apis })).some((v) => v.id.startsWith("responses"))).toBe(false);
  });
});
