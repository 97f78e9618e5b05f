import { describe, expect, it } from "vitest";
import { connectorMode, type EngineKvMeta } from "../../../src/pd/connector.js";
import { normaliseN, prefillDecisionHeader, relayKvParams, shouldSkipPrefill } from "../../../src/pd/skip.js";

const modes: Record<string, EngineKvMeta> = {
  NIXL: { kvConnector: "NixlConnector", bootstrapHost: "10.0.0.1" },
  Passthrough: { bootstrapHost: "10.0.0.1" },
  "Mooncake-modern": { kvConnector: "MooncakeConnector", kvEngineId: "eng", bootstrapHost: "10.0.0.1" },
  "Mooncake-legacy": { kvConnector: "MooncakeConnector", bootstrapHost: "10.0.0.1" },
};

// pd-reference section 11: n x encode x mm x mode = 32 cells; exactly two skip.
const cells = [1, 4].flatMap((n) =>
  [false, true].flatMap((enc) =>
    [false, true].flatMap((mm) => Object.keys(modes).map((mode) => ({ n, enc, mm, mode }))),
  ),
);

describe("shouldSkipPrefill, gRPC path (32 cells)", () => {
  it.each(cells)("n=$n encode=$enc mm=$mm mode=$mode", ({ n, enc, mm, mode }) => {
    const m = connectorMode(modes[mode]);
    const skip = shouldSkipPrefill({
      relayKvParams: relayKvParams(n),
      hasEncodeAssignments: enc,
      hasMmInputs: mm,
      decodeNeedsPrefillBootstrap: m.kind === "mooncake",
    });
    const expected = n === 4 && !enc && !mm && (mode === "NIXL" || mode === "Passthrough");
    expect(skip).toBe(expected);
  });

  it("exactly two cells skip", () => {
    const skips = cells.filter(({ n, enc, mm, mode }) =>
      shouldSkipPrefill({
        relayKvParams: relayKvParams(n),
        hasEncodeAssignments: enc,
        hasMmInputs: mm,
        decodeNeedsPrefillBootstrap: connectorMode(modes[mode]).kind === "mooncake",
      }),
    );
    expect(skips.map((c) => c.mode).sort()).toEqual(["NIXL", "Passthrough"]);
  });
});

describe("shouldSkipPrefill, HTTP path inputs", () => {
  // Over HTTP the full body goes to both legs and there is no typed bootstrap form.
  it.each([
    { n: 1, skip: false },
    { n: 2, skip: true },
    { n: 16, skip: true },
    { n: 0, skip: false },
  ])("n=$n -> skip=$skip", ({ n, skip }) => {
    expect(
      shouldSkipPrefill({ relayKvParams: relayKvParams(n), hasEncodeAssignments: false, hasMmInputs: false, decodeNeedsPrefillBootstrap: false }),
    ).toBe(skip);
  });
});

describe("n normalisation (T14)", () => {
  it.each([
    [undefined, 1],
    [null, 1],
    [0, 1],
    [1, 1],
    [4, 4],
    [-3, 1],
    [Number.NaN, 1],
  ])("%s -> %s", (n, expected) => {
    expect(normaliseN(n as number | undefined)).toBe(expected);
    expect(relayKvParams(n as number | undefined)).toBe(expected <= 1);
  });
});

it("decision header values", () => {
  expect(prefillDecisionHeader(undefined)).toBe("ran");
  expect(prefillDecisionHeader("fanout")).toBe("skipped; reason=fanout");
});
