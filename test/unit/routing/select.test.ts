// Selection after failed attempts (issue 32): an engine that failed is avoided while another of
// its pool can take the attempt, and one that hung is never picked again, even when it is the
// only one left (the selection is then "unavailable", and the pipeline answers with the failure).
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/load.js";
import { selectAnotherDecode, selectEngines, type Selection } from "../../../src/routing/select.js";

const url = (port: number) => `http://127.0.0.1:${port}`;
const config = parseConfig(
  JSON.stringify({
    models: {
      pd: { prefill: [{ name: "p0", url: url(1) }, { name: "p1", url: url(2) }], decode: [{ name: "d0", url: url(3) }, { name: "d1", url: url(4) }] },
      one: { prefill: [{ name: "q0", url: url(5) }], decode: [{ name: "e0", url: url(6) }] },
      agg: { regular: [{ name: "r0", url: url(7) }] },
    },
  }),
);
const connect = new Set(["connect"]);
const picked = (s: Selection) => (s.kind === "pd" ? `${s.prefill.name}+${s.decode.name}` : s.kind === "regular" ? s.engine.name : `${s.kind}${s.kind === "unavailable" ? `:${s.role}` : ""}`);

describe("selection after failed attempts", () => {
  it.each([
    // model, avoided, never, routable engines (all when undefined), expected pick(s)
    ["pd", [], [], undefined, ["p0+d0", "p1+d1"]],
    ["pd", ["p0"], [], undefined, ["p1+d0", "p1+d1"]],
    ["pd", [], ["p0"], undefined, ["p1+d0", "p1+d1"]],
    ["pd", ["p0", "p1"], [], undefined, ["p0+d0", "p1+d1"]], // every one failed: fall back to them
    ["pd", [], ["p0", "p1"], undefined, ["unavailable:prefill"]], // both hung: none is tried again
    ["pd", ["p1"], ["p0"], undefined, ["p1+d0", "p1+d1"]], // the failed one over the hung one
    ["pd", [], ["d1"], undefined, ["p0+d0", "p1+d0"]],
    ["pd", [], ["p0"], ["p0", "d0", "d1"], ["unavailable:prefill"]], // p1's breaker is open
    ["one", ["q0"], [], undefined, ["q0+e0"]], // a lone engine that failed fast is tried again
    ["one", [], ["q0"], undefined, ["unavailable:prefill"]], // ... one that hung is not
    ["agg", [], ["r0"], undefined, ["unavailable:regular"]],
    ["nope", [], [], undefined, ["none"]],
  ] as const)("%s, avoid %j, never %j, routable %j -> %j", (model, avoid, never, routable, expected) => {
    const picks = new Set<string>();
    for (let i = 0; i < 8; i++) {
      picks.add(picked(selectEngines(config, model, connect, {
        exclude: new Set(avoid),
        never: new Set(never),
        random: () => (i % 4) / 4,
        ...(routable ? { routable: (e) => (routable as readonly string[]).includes(e.name) } : {}),
      })));
    }
    for (const p of picks) expect(expected).toContain(p);
  });

  it("decode failover never picks a decode engine that hung on an earlier attempt", () => {
    expect(selectAnotherDecode(config, "pd", connect, { exclude: new Set(["d0"]), never: new Set(["d1"]) })).toBeUndefined();
    expect(selectAnotherDecode(config, "pd", connect, { exclude: new Set(["d0"]), never: new Set() })?.name).toBe("d1");
  });
});
