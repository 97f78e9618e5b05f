// The one PD decision with its reason (ARCHITECTURE decisions 1 and 13): every reason crossed
// with every guard, and a guard always wins.
import { describe, expect, it } from "vitest";
import { prefillSkipReason, type SkipPrefillInputs } from "../../../src/pd/skip.js";

const NONE: SkipPrefillInputs = { relayKvParams: true, hasEncodeAssignments: false, hasMmInputs: false, decodeNeedsPrefillBootstrap: false };

/** Inputs that make each reason fire on their own. */
const REASONS: Record<string, Partial<SkipPrefillInputs>> = {
  fanout: { relayKvParams: false },
  short_prompt: { promptTokens: 100, decodeOnlyMaxPromptTokens: 512 },
  prefill_busy: { prefillWaiting: 8, prefillQueueLimit: 4, decodeWaiting: 0 },
};
const GUARDS: Record<string, Partial<SkipPrefillInputs>> = {
  encode: { hasEncodeAssignments: true },
  multimodal: { hasMmInputs: true },
  mooncake_bootstrap: { decodeNeedsPrefillBootstrap: true },
};

describe("each reason alone skips, and says why", () => {
  it.each(Object.entries(REASONS))("%s", (reason, inputs) => {
    expect(prefillSkipReason({ ...NONE, ...inputs })).toBe(reason);
  });
  it("nothing set: prefill runs", () => expect(prefillSkipReason(NONE)).toBeUndefined());
});

describe("a guard always wins", () => {
  const cells = Object.entries(REASONS).flatMap(([reason, r]) => Object.entries(GUARDS).map(([guard, g]) => ({ reason, guard, inputs: { ...NONE, ...r, ...g } })));
  it.each(cells)("$reason + $guard -> prefill runs", ({ inputs }) => {
    expect(prefillSkipReason(inputs)).toBeUndefined();
  });
  it("all reasons at once, with any guard -> runs; without -> fanout first", () => {
    const all = { ...NONE, ...REASONS.fanout, ...REASONS.short_prompt, ...REASONS.prefill_busy };
    for (const g of Object.values(GUARDS)) expect(prefillSkipReason({ ...all, ...g })).toBeUndefined();
    expect(prefillSkipReason(all)).toBe("fanout");
    expect(prefillSkipReason({ ...all, relayKvParams: true })).toBe("short_prompt");
  });
});

describe("thresholds", () => {
  it.each([
    [511, 512, "short_prompt"],
    [512, 512, undefined], // at the threshold the leg runs
    [100, 0, undefined], // 0 = off
  ])("%i prompt tokens, threshold %i -> %s", (tokens, threshold, reason) => {
    expect(prefillSkipReason({ ...NONE, promptTokens: tokens, decodeOnlyMaxPromptTokens: threshold })).toBe(reason);
  });
  it("an unknown prompt length never skips for length", () => {
    expect(prefillSkipReason({ ...NONE, decodeOnlyMaxPromptTokens: 512 })).toBeUndefined();
  });
  it.each([
    [4, 0, 4, undefined, "prefill_busy"], // at the limit, decode idle
    [3, 0, 4, undefined, undefined], // below the limit
    [9, 4, 4, undefined, undefined], // decode at its limit (defaults to prefill's): keep prefill
    [9, 4, 4, 8, "prefill_busy"], // decode below its own, higher limit
    [9, undefined, 4, undefined, "prefill_busy"], // decode unknown counts as idle
    [undefined, 0, 4, undefined, undefined], // no reading yet: no skip
  ])("prefill waiting %s, decode waiting %s, limits %s/%s -> %s", (pw, dw, pl, dl, reason) => {
    const inputs: SkipPrefillInputs = { ...NONE, prefillQueueLimit: pl };
    if (pw !== undefined) inputs.prefillWaiting = pw;
    if (dw !== undefined) inputs.decodeWaiting = dw;
    if (dl !== undefined) inputs.decodeQueueLimit = dl;
    expect(prefillSkipReason(inputs)).toBe(reason);
  });
});
