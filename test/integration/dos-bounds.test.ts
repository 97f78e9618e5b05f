// Issue 32, items 1-2, in workerd against the sim: nothing a client or an engine sends stalls
// the isolate. A 3.9 MB prompt for a model the gateway tokenizes is refused with 400
// context_length_exceeded naming `prompt` after tokenizing only up to the context length (or
// before tokenizing, under bounds.max_prompt_bytes), with no engine work; another request
// meanwhile is served while a long run is being merged; a 4 MiB SSE event passes through the
// relays whole, and an event past bounds.max_sse_event_bytes ends the stream with the
// gateway's error event naming the engine, the engine's stream cancelled.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generatesReceived } from "../support/pd-fixtures.js";
import { post } from "./openai-fixtures.js";

const QWEN = "Qwen/Qwen3-0.6B";
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const prose = (bytes: number) => "The quick brown fox jumps over the lazy dog, 1234 times! ".repeat(Math.ceil(bytes / 57)).slice(0, bytes);

async function qwenGateway(extra: Record<string, unknown> = {}): Promise<TestGateway> {
  cluster = await startTestCluster({ engines: [{ name: "engine", role: "both", kvConnector: "none", model: QWEN, port: 0, latency: FAST }] });
  return testGateway({ models: { [QWEN]: { regular: [{ name: "engine", url: cluster.url("engine"), transport: "connect" }] } }, retry: { disabled: true }, ...extra });
}

async function errorOf(res: Response): Promise<{ status: number; code: string | null; param: string | null; message: string }> {
  const body = (await res.json()) as { error: { code: string; param: string | null; message: string } };
  return { status: res.status, code: res.headers.get("x-gateway-error-code"), param: body.error.param, message: body.error.message };
}

describe("a huge prompt for a model the gateway tokenizes", () => {
  it("3.9 MB of text: 400 context_length_exceeded naming prompt, tokenizing stopped at the context, no engine work", async () => {
    const gw = await qwenGateway();
    const res = await post(gw, "/v1/completions", { model: QWEN, prompt: prose(3_900_000), max_tokens: 4 });
    const e = await errorOf(res);
    expect(e).toMatchObject({ status: 400, code: "context_length_exceeded", param: "prompt" });
    expect(e.message).toBe("This model's maximum context length is 40960 tokens, and the prompt has at least 40960 tokens (tokenizing stopped there), leaving no room for output");
    expect(await generatesReceived(cluster!, "engine")).toHaveLength(0);
  });

  it("under bounds.max_prompt_bytes: refused by its size before tokenizing (chat names messages)", async () => {
    const gw = await qwenGateway({ bounds: { max_prompt_bytes: { [QWEN]: 1_000_000 } } });
    const completion = await errorOf(await post(gw, "/v1/completions", { model: QWEN, prompt: prose(3_900_000) }));
    expect(completion).toMatchObject({ status: 400, code: "context_length_exceeded", param: "prompt" });
    expect(completion.message).toBe("The prompt is 3900000 bytes (UTF-8); no prompt of more than 1000000 bytes fits this model's maximum context length of 40960 tokens");
    const chat = await errorOf(await post(gw, "/v1/chat/completions", { model: QWEN, messages: [{ role: "user", content: prose(1_100_000) }] }));
    expect(chat).toMatchObject({ status: 400, code: "context_length_exceeded", param: "messages" });
    expect(await generatesReceived(cluster!, "engine")).toHaveLength(0);
  });

  it("1 MB of spaces is a 7813-token prompt: served (the long run merged in slices)", async () => {
    const gw = await qwenGateway();
    const res = await post(gw, "/v1/completions", { model: QWEN, prompt: " ".repeat(1_000_000), max_tokens: 2 });
    expect(res.status).toBe(200);
    const [g] = await generatesReceived(cluster!, "engine");
    expect((g!.tokenized as { input_ids: number[] }).input_ids).toHaveLength(7813);
  });

  it("while a long run is being merged, another request on the isolate is served first", async () => {
    const gw = await qwenGateway();
    // The tokenizer loaded, so both requests only tokenize.
    expect((await post(gw, "/v1/completions", { model: QWEN, prompt: "warm", max_tokens: 1 })).status).toBe(200);
    const order: string[] = [];
    // 1M letters without a break: one run of merges, then more tokens than the context.
    const letters = Array.from({ length: 1_000_000 }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join("");
    const big = post(gw, "/v1/completions", { model: QWEN, prompt: letters, max_tokens: 1 }).then(async (r) => (order.push("big"), errorOf(r)));
    await new Promise((r) => setTimeout(r, 20));
    const small = post(gw, "/v1/completions", { model: QWEN, prompt: "hello", max_tokens: 1 }).then((r) => (order.push("small"), r.status));
    expect(await small).toBe(200);
    expect(await big).toMatchObject({ status: 400, code: "context_length_exceeded", param: "prompt" });
    expect(order).toEqual(["small", "big"]);
  });
});

describe.each(["inspect", "native"] as const)("a big SSE event through the %s relay", (relay) => {
  async function aggGateway(maxEventBytes?: number): Promise<TestGateway> {
    cluster = await startTestCluster({ engines: [{ name: "engine", role: "both", kvConnector: "none", model: "agg", port: 0, latency: FAST }] });
    return testGateway({
      models: { agg: { regular: [{ name: "engine", url: cluster.url("engine"), transport: "openai-http" }], sse_relay: relay } },
      retry: { disabled: true },
      ...(maxEventBytes !== undefined ? { bounds: { max_sse_event_bytes: maxEventBytes } } : {}),
    });
  }
  const body = { model: "agg", prompt: "hi", max_tokens: 3, ignore_eos: true, stream: true };

  it("a 4 MiB event passes whole, and the stream completes", async () => {
    const gw = await aggGateway();
    await cluster!.setFaults("engine", { bigEvent: { bytes: 4 * 1024 * 1024 } });
    const text = await (await post(gw, "/v1/completions", body)).text();
    const events = text.split("\n\n").filter(Boolean);
    expect(events[0]!.length).toBeGreaterThanOrEqual(4 * 1024 * 1024);
    expect(JSON.parse(events[0]!.slice(6)).choices[0].logprobs.content.length).toBeGreaterThan(100_000);
    expect(events.at(-1)).toBe("data: [DONE]");
    await gw.settle();
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 200 }]);
  });

  // The engine stalls after the 3 MiB event's first bytes. The inspecting relay reads every
  // chunk itself, and the client gets the gateway's error event. The native one fails the leg
  // once the watch passed the cap, which aborts the engine's fetch: its pipe passes on what it
  // holds and ends between writes; the event's first bytes went ahead of the watch, so a blank
  // line ends them before the gateway's error event (the pipe left the client's body open).
  // The same on workerd's own socket: test/e2e/sse-big-event.test.ts.
  it("an event past max_sse_event_bytes: the stream ends as engine_event_too_large, the engine's stream cancelled", async () => {
    const gw = await aggGateway(1024 * 1024);
    await cluster!.setFaults("engine", { bigEvent: { bytes: 3 * 1024 * 1024, unterminated: true } });
    const res = await post(gw, "/v1/completions", body);
    expect(res.status).toBe(200);
    const text = await res.text().catch(() => "<broken body>");
    const error = `data: {"error":{"message":"Engine sent an SSE event larger than 1048576 bytes (bounds.max_sse_event_bytes) (engine 'engine')","type":"server_error","param":null,"code":"engine_event_too_large"}}\n\n`;
    if (relay === "inspect") expect(text).toBe(error);
    else {
      expect(text.startsWith('data: {"id"')).toBe(true);
      expect(text.endsWith(`\n\n${error}`)).toBe(true);
    }
    await eventually(async () => expect((await cluster!.stats("engine")).activeRequests).toBe(0));
    await gw.settle();
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 502, errorCode: "engine_event_too_large" }]);
  });
});
