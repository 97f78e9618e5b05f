// The one job builder (api/job.ts) and the OpenAI surface's prompt for it: what every
// surface gets the same way (prompt length, routing key, override, engine-side id).
import { describe, expect, it } from "vitest";
import { buildJob, promptTokensOf, type JobInput } from "../../../src/api/job.js";
import { jobPromptOf, type OpenAiRequest } from "../../../src/api/openai/request.js";
import { GatewayError } from "../../../src/core/errors.js";

const gw = (owner = "open", overrides = true) => ({ owner, config: { debug: { allow_pd_overrides: overrides } } }) as Parameters<typeof buildJob>[0];

function input(o: Partial<JobInput<string>> = {}): JobInput<string> {
  return {
    model: "m",
    surface: "openai",
    endpoint: "/v1/chat/completions",
    payload: "body",
    prompt: () => ({ text: "hello there" }),
    fanout: 1,
    hasMmInputs: false,
    streamed: true,
    clientRequestId: "r1",
    headers: new Headers(),
    ...o,
  };
}

describe("buildJob", () => {
  it("reads the routing key and the override from the headers, and absence is undefined", () => {
    const plain = buildJob(gw(), input());
    expect([plain.routingKey, plain.override]).toEqual([undefined, undefined]);
    const keyed = buildJob(gw(), input({ headers: new Headers({ "x-routing-key": "s-1", "x-pd-override": "force-prefill" }) }));
    expect([keyed.routingKey, keyed.override]).toEqual(["s-1", "force-prefill"]);
  });

  it("an override the config does not allow is ignored; a bad one is a 400 naming the header", () => {
    expect(buildJob(gw("open", false), input({ headers: new Headers({ "x-pd-override": "force-prefill" }) })).override).toBeUndefined();
    const bad = () => buildJob(gw(), input({ headers: new Headers({ "x-pd-override": "sometimes" }) }));
    expect(bad).toThrow(GatewayError);
    expect(bad).toThrow(/x-pd-override/);
  });

  it("ids: the engine-side id carries the owner's tag on a keyed data plane", () => {
    expect(buildJob(gw(), input()).ids).toEqual({ client: "r1", engine: "r1", owner: "open" });
    expect(buildJob(gw("team-a"), input()).ids).toEqual({ client: "r1", engine: "r1.team-a", owner: "team-a" });
  });

  it("the prompt is worked out once, on first use, and its length follows it", () => {
    let calls = 0;
    const job = buildJob(gw(), input({ prompt: () => (calls++, { tokens: [1, 2, 3] }) }));
    expect(calls).toBe(0);
    expect(job.promptTokens()).toEqual({ count: 3, exact: true });
    expect(job.prompt()).toEqual({ tokens: [1, 2, 3] });
    expect(calls).toBe(1);
  });
});

describe("promptTokensOf", () => {
  it.each([
    [{ tokens: [5, 6, 7, 8] }, { count: 4, exact: true }],
    [{ text: "abcdefgh" }, { count: 2, exact: false }],
    [{ text: "" }, { count: 0, exact: false }],
  ] as const)("%j -> %j", (p, expected) => {
    expect(promptTokensOf(p)).toEqual(expected);
  });
});

describe("jobPromptOf (OpenAI bodies)", () => {
  const req = (body: Record<string, unknown>): OpenAiRequest => ({ route: "/v1/completions", text: JSON.stringify(body), body, model: "m", stream: false });
  it.each([
    ["a text prompt", { prompt: "hi" }, { text: "hi" }],
    ["a token-id prompt", { prompt: [1, 2] }, { tokens: [1, 2] }],
    ["a batch", { prompt: ["a", "b"] }, { text: '["a","b"]' }],
    ["chat messages, string and text-part contents", { messages: [{ role: "system", content: "be brief" }, { role: "user", content: [{ type: "text", text: "hi" }, { type: "image_url" }] }] }, { text: "be brief\nhi" }],
    ["nothing", {}, { text: "" }],
  ])("%s", (_name, body, expected) => {
    expect(jobPromptOf(req(body))).toEqual(expected);
  });
});
