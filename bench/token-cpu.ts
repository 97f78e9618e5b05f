// Phases "parsers" (issue 28) and "apis" (issue 29): the gateway's CPU per streamed token when
// the same model streams the same number of tokens two ways, side by side (cpu.ts's rounds).
//  - parsers: a Qwen3 model on a VllmEngine engine, a chat stream with `tools` (hermes) and
//    thinking on (qwen3 reasoning) whose scripted reply has reasoning, text and a tool call,
//    vs the same model with no tools, thinking off and a plain-text reply of as many tokens;
//  - apis: /v1/responses and /v1/messages vs /v1/chat/completions on openai-http engines (all
//    three relayed from the engine's own API) and /v1/responses vs chat on a VllmEngine model
//    (Responses served through the gateway's chat path).
// Every reply's token count is read from a non-streamed probe of the same request first, so a
// stream that ends early (or a parser that drops the markup) fails the phase instead of
// skewing the ratio.
import type { BenchContext } from "./context.js";
import { measureRounds, type CpuCase, type CpuPlan, type Serving, type Work } from "./cpu.js";
import { once, type RequestSpec } from "./load.js";
import { M, prompt, REPLY_TOKENS } from "./setup.js";

export interface TokenCpuCase extends CpuCase {
  /** Output tokens of one reply (the probe's usage), the same for every case of a comparison. */
  tokensPerRequest: number;
  cpuUsPerToken: number;
}

export interface TokenCpuRatio {
  id: string;
  case: string;
  baseline: string;
  ratio: number;
}

export interface TokenCpuResult {
  cases: TokenCpuCase[];
  ratios: TokenCpuRatio[];
}

type Api = "chat" | "responses" | "messages";

const PATH: Record<Api, string> = { chat: "/v1/chat/completions", responses: "/v1/responses", messages: "/v1/messages" };

/** A streamed (or, for the probe, whole) request of `api` for `model`, about 512 tokens at most:
 *  the engines of the apis phase sample EOS at REPLY_TOKENS (sim fault eosAfter), since Messages
 *  has no ignore_eos. */
export function apiBody(api: Api, model: string, stream: boolean): string {
  const text = prompt(8);
  if (api === "responses") return JSON.stringify({ model, input: text, max_output_tokens: 2 * REPLY_TOKENS, stream });
  return JSON.stringify({ model, messages: [{ role: "user", content: text }], max_tokens: 2 * REPLY_TOKENS, stream });
}

const WEATHER_TOOLS = [
  { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] } } },
  { type: "function", function: { name: "get_time", parameters: { type: "object", properties: { zone: { type: "string" } } } } },
];

const SENTENCE = "The user asks about the weather in Paris, so I should call the weather tool with the city and the number of days. ";
/** Reasoning (thinking on: the template opened `<think>` in the prompt), text, then a call. */
export const PARSED_REPLY =
  `${SENTENCE.repeat(8)}</think>\n\nLet me check the forecast for you.\n` +
  `<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>`;
const PLAIN_REPLY = "The weather in Paris is mild this week, with some rain on Tuesday and sun by the weekend. ".repeat(20);

/** The parsers case and its baseline; the baseline's max_tokens is the parsers reply's length
 *  (its plain text is longer, cut there with ignore_eos), so both carry the same tokens. */
export function parsersBody(withParsers: boolean, stream: boolean, tokens?: number): string {
  const common = { model: M.qwen3Tools, stream, stop: ["§"], ignore_eos: true };
  if (withParsers) {
    return JSON.stringify({ ...common, messages: [{ role: "user", content: `<sim-say>${PARSED_REPLY}§</sim-say>` }], tools: WEATHER_TOOLS, chat_template_kwargs: { enable_thinking: true }, max_tokens: 1024 });
  }
  return JSON.stringify({ ...common, messages: [{ role: "user", content: `<sim-say>${PLAIN_REPLY}§</sim-say>` }], chat_template_kwargs: { enable_thinking: false }, max_tokens: tokens ?? 1024 });
}

interface Probed {
  tokens: number;
  json: Record<string, unknown>;
}

async function probe(s: Serving, path: string, body: string): Promise<Probed> {
  const ex = await once(s.target, { path, body }, 1, true);
  const json = JSON.parse(ex.body ?? "{}") as Record<string, unknown>;
  if (ex.status !== 200) throw new Error(`probe ${path}: HTTP ${ex.status}: ${(ex.body ?? "").slice(0, 300)}`);
  const usage = (json.usage ?? {}) as Record<string, number>;
  const tokens = usage.completion_tokens ?? usage.output_tokens;
  if (tokens === undefined) throw new Error(`probe ${path}: no usage in ${(ex.body ?? "").slice(0, 300)}`);
  return { tokens, json };
}

const sseWork = (spec: RequestSpec): Work => async (t) => (await once(t, spec, 16)).events?.length ?? 0;

function withTokens(c: CpuCase, tokens: number): TokenCpuCase {
  return { ...c, tokensPerRequest: tokens, cpuUsPerToken: (1000 * c.cpuMsPerRequest) / tokens };
}

function ratioOf(cases: TokenCpuCase[], id: string, kase: string, baseline: string): TokenCpuRatio | undefined {
  const a = cases.find((c) => c.case === kase);
  const b = cases.find((c) => c.case === baseline);
  if (!a || !b || b.cpuUsPerToken <= 0) return undefined;
  return { id, case: kase, baseline, ratio: a.cpuUsPerToken / b.cpuUsPerToken };
}

/** Names of the parsers phase's cases (verdicts.ts reads them). */
export const PARSERS_CASE = "Qwen3 VllmEngine chat stream, tools (hermes) + thinking on (qwen3)";
export const PARSERS_BASELINE = "Qwen3 VllmEngine chat stream, no tools, thinking off";

export async function measureParsers(ctx: BenchContext): Promise<TokenCpuResult> {
  const gw: Serving = { target: ctx.gateway.target, pid: ctx.gateway.workerPid };
  const path = PATH.chat;
  const parsed = await probe(gw, path, parsersBody(true, false));
  const msg = ((parsed.json.choices as { message: Record<string, unknown> }[] | undefined)?.[0]?.message ?? {});
  if (!Array.isArray(msg.tool_calls) || msg.tool_calls.length !== 1 || typeof msg.reasoning !== "string") {
    throw new Error(`parsers probe: expected reasoning and one tool call, got ${JSON.stringify(msg).slice(0, 400)}`);
  }
  const plain = await probe(gw, path, parsersBody(false, false, parsed.tokens));
  if (plain.tokens !== parsed.tokens) throw new Error(`parsers: ${parsed.tokens} tokens with parsers, ${plain.tokens} without`);
  ctx.log(`parsers: both replies ${parsed.tokens} tokens (reasoning, text and one tool call vs plain text)`);
  const n = ctx.counts.cpuStreamRequests;
  const plan: CpuPlan = [
    [PARSERS_CASE, gw, sseWork({ path, body: parsersBody(true, true), sse: true }), n],
    [PARSERS_BASELINE, gw, sseWork({ path, body: parsersBody(false, true, parsed.tokens), sse: true }), n],
  ];
  const cases = (await measureRounds(ctx, plan, ctx.counts.repeats)).map((c) => withTokens(c, parsed.tokens));
  const ratios = [ratioOf(cases, "parsers", PARSERS_CASE, PARSERS_BASELINE)].filter((x): x is TokenCpuRatio => x !== undefined);
  for (const r of ratios) ctx.log(`parsers: CPU per token with parsers / without: ${r.ratio.toFixed(2)}x`);
  return { cases, ratios };
}

export const apiCase = (api: Api, engine: "openai-http" | "VllmEngine") => `${PATH[api]} stream, ${engine}`;

export async function measureApis(ctx: BenchContext): Promise<TokenCpuResult> {
  const gw: Serving = { target: ctx.gateway.target, pid: ctx.gateway.workerPid };
  const n = ctx.counts.cpuStreamRequests;
  const legs: [Api, "openai-http" | "VllmEngine", string][] = [
    ["chat", "openai-http", M.apisHttp],
    ["responses", "openai-http", M.apisHttp],
    ["messages", "openai-http", M.apisHttp],
    ["chat", "VllmEngine", M.apisQwen3],
    ["responses", "VllmEngine", M.apisQwen3],
  ];
  const plan: CpuPlan = [];
  for (const [api, engine, model] of legs) {
    const { tokens } = await probe(gw, PATH[api], apiBody(api, model, false));
    if (tokens !== REPLY_TOKENS) throw new Error(`apis: ${apiCase(api, engine)} replied ${tokens} tokens, not ${REPLY_TOKENS}`);
    plan.push([apiCase(api, engine), gw, sseWork({ path: PATH[api], body: apiBody(api, model, true), sse: true }), n]);
  }
  ctx.log(`apis: every reply ${REPLY_TOKENS} tokens`);
  const cases = (await measureRounds(ctx, plan, ctx.counts.repeats)).map((c) => withTokens(c, REPLY_TOKENS));
  const ratios = [
    ratioOf(cases, "responses-http", apiCase("responses", "openai-http"), apiCase("chat", "openai-http")),
    ratioOf(cases, "messages-http", apiCase("messages", "openai-http"), apiCase("chat", "openai-http")),
    ratioOf(cases, "responses-vllm", apiCase("responses", "VllmEngine"), apiCase("chat", "VllmEngine")),
  ].filter((x): x is TokenCpuRatio => x !== undefined);
  for (const r of ratios) ctx.log(`apis: ${r.case} / ${r.baseline}: ${r.ratio.toFixed(2)}x per token`);
  return { cases, ratios };
}
