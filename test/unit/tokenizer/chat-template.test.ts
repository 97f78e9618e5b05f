// Rendered chat prompts must equal what transformers' apply_chat_template renders. transformers
// cannot be installed here, so the goldens come from Jinja2 3.1.6 configured as transformers
// configures it (see the script's header):
//   python3 test/fixtures/chat/render_golden.py > test/fixtures/chat/golden.json
// cases.json is read losslessly here (as Python's json reads it); a second pass through plain
// JSON.parse shows, honestly, which chats a naive gateway would render differently.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer as RustTokenizer } from "tokenizers";
import { beforeAll, describe, expect, it } from "vitest";
import { compileChatTemplate, encodeChatPrompt, renderChatTemplate, strftime } from "../../../src/tokenizer/chat-template.js";
import { ChatTemplateError } from "../../../src/tokenizer/errors.js";
import { parseLosslessJson, toPlain, type LosslessJson } from "../../../src/tokenizer/lossless-json.js";
import { selectChatTemplate } from "../../../src/tokenizer/template-source.js";
import { vllmConversation, vllmToolDicts } from "../../../src/api/openai/chat-conversation.js";
import type { EdgeTokenizer } from "../../../src/tokenizer/tokenizer.js";
import { QWEN3_TOKENIZER_JSON, qwen3Files, qwen3Tokenizer } from "./qwen3-files.js";

const FIXTURES = join(import.meta.dirname, "..", "..", "fixtures", "chat");
const casesText = readFileSync(join(FIXTURES, "cases.json"), "utf8");
const golden = JSON.parse(readFileSync(join(FIXTURES, "golden.json"), "utf8")) as {
  clock: string;
  renders: Record<string, { text?: string; error?: string }>;
};
const CLOCK = new Date(golden.clock + "Z");

type Case = Map<string, LosslessJson>;
const lossless = parseLosslessJson(casesText) as Map<string, LosslessJson>;
const CASES = lossless.get("cases") as Case[];
const configs: Record<string, Record<string, unknown>> = {
  qwen3: JSON.parse(qwen3Files()["tokenizer_config.json"]!) as Record<string, unknown>,
  ...(toPlain(lossless.get("configs")!) as Record<string, Record<string, unknown>>),
};

/** Renders one case the way the gateway will: pick the template, compile, render. */
async function renderCase(c: Case, parse: "lossless" | "naive"): Promise<{ text?: string; error?: string }> {
  const v = parse === "lossless" ? c : (parseLosslessJson(JSON.stringify(toPlain(c))) as Case);
  const plain = parse === "naive" ? (JSON.parse(JSON.stringify(toPlain(c))) as Record<string, unknown>) : undefined;
  // "vllm" cases: the gateway's rebuild of the conversation and tools, as the chat path runs
  // it (the script mirrors vLLM's own Python for these).
  const vllm = c.get("vllm") === true;
  const get = (k: string) => {
    if (vllm && k === "messages") return vllmConversation(v.get(k) as LosslessJson[]) as never;
    if (vllm && k === "tools") return vllmToolDicts(v.get(k)) as never;
    return (plain ? plain[k] : v.get(k)) as never;
  };
  const config = configs[(c.get("config") as string | undefined) ?? "qwen3"]!;
  const files = new Map([["tokenizer_config.json", JSON.stringify(config)]]);
  const inline = c.get("template") as string | undefined;
  const source = inline ?? selectChatTemplate(files, { hasTools: c.has("tools"), name: c.get("template_name") as string | undefined });
  try {
    const text = await renderChatTemplate(await compileChatTemplate(source), {
      messages: get("messages"),
      tools: get("tools") ?? null,
      documents: get("documents") ?? null,
      addGenerationPrompt: (c.get("add_generation_prompt") as boolean | undefined) ?? false,
      continueFinalMessage: (c.get("continue_final_message") as boolean | undefined) ?? false,
      kwargs: toPlain(c.get("kwargs") ?? new Map()) as Record<string, unknown>,
      tokenizerConfig: config,
      now: CLOCK,
    });
    return { text };
  } catch (err) {
    if (err instanceof ChatTemplateError && err.kind === "raise_exception") return { error: err.message };
    throw err;
  }
}

const name = (c: Case) => c.get("name") as string;

describe("chat templates render as transformers does (Jinja2 goldens)", () => {
  it(`has at least 20 chats (${CASES.length}) and a golden for each`, () => {
    expect(CASES.length).toBeGreaterThanOrEqual(20);
    expect(Object.keys(golden.renders).sort()).toEqual(CASES.map(name).sort());
  });

  for (const c of CASES) {
    it(name(c), async () => {
      expect(await renderCase(c, "lossless")).toEqual(golden.renders[name(c)]);
    });
  }

  it("a naive JSON.parse path renders exactly the number/key-order chats differently", async () => {
    const differ: string[] = [];
    for (const c of CASES.filter((x) => x.get("vllm") !== true)) {
      const naive = await renderCase(c, "naive");
      if (JSON.stringify(naive) !== JSON.stringify(golden.renders[name(c)])) differ.push(name(c));
    }
    // The lossless path above matches all of them; this documents why it exists.
    expect(differ.sort()).toEqual(["tojson-variants-and-numbers", "tool-call-number-args", "tools-with-system"]);
  });
});

describe("encodeChatPrompt", () => {
  let tok: EdgeTokenizer;
  let rust: RustTokenizer;
  beforeAll(async () => {
    tok = await qwen3Tokenizer();
    rust = RustTokenizer.fromFile(QWEN3_TOKENIZER_JSON);
  });

  it("encodes every rendered Qwen3 prompt to HF's ids, without adding special tokens again", async () => {
    let checked = 0;
    for (const [key, r] of Object.entries(golden.renders)) {
      if (r.text === undefined || !CASES.find((c) => name(c) === key && !c.has("config"))) continue;
      const want = (await rust.encode(r.text, null, { addSpecialTokens: false })).getIds();
      expect(encodeChatPrompt(tok, r.text)).toEqual(want);
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(15);
  });
});

describe("typed errors", () => {
  it("raise_exception carries the template's message", async () => {
    const t = await compileChatTemplate("{{ raise_exception('System role not supported') }}");
    await expect(renderChatTemplate(t, { messages: [] })).rejects.toMatchObject({ kind: "raise_exception", message: "System role not supported" });
  });

  it("an unknown filter is an unsupported_feature naming it, not a crash", async () => {
    const t = await compileChatTemplate("{{ messages | wordcount }}");
    const err = await renderChatTemplate(t, { messages: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChatTemplateError);
    expect(err).toMatchObject({ kind: "unsupported_feature", feature: 'filter "wordcount" on ArrayValue' });
  });

  it("a template the parser rejects is an unsupported_feature at compile time", async () => {
    const err = await compileChatTemplate("{% frobnicate %}x{% endfrobnicate %}").catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: "unsupported_feature" });
  });

  it("a bundle without a template is no_template; bad tool-call JSON is invalid_request", async () => {
    expect(() => selectChatTemplate(new Map([["tokenizer_config.json", "{}"]]), { hasTools: false })).toThrow(
      expect.objectContaining({ kind: "no_template" }),
    );
    const t = await compileChatTemplate("{{ messages[0].tool_calls[0].function.arguments | tojson }}");
    const messages = [{ role: "assistant", content: "", tool_calls: [{ function: { name: "f", arguments: "{not json" } }] }];
    await expect(renderChatTemplate(t, { messages })).rejects.toMatchObject({ kind: "invalid_request" });
  });

  it("continue_final_message with add_generation_prompt is invalid_request", async () => {
    const t = await compileChatTemplate("x");
    await expect(renderChatTemplate(t, { messages: [{ role: "assistant", content: "a" }], addGenerationPrompt: true, continueFinalMessage: true })).rejects.toMatchObject({
      kind: "invalid_request",
    });
  });
});

describe("template selection", () => {
  const files = (o: Record<string, string>) => new Map(Object.entries(o));
  it("prefers chat_template.jinja, then chat_template.json, then tokenizer_config.json", () => {
    const cfg = JSON.stringify({ chat_template: "from-config" });
    expect(selectChatTemplate(files({ "tokenizer_config.json": cfg, "chat_template.json": JSON.stringify({ chat_template: "from-json" }), "chat_template.jinja": "from-jinja" }), { hasTools: false })).toBe("from-jinja");
    expect(selectChatTemplate(files({ "tokenizer_config.json": cfg, "chat_template.json": JSON.stringify({ chat_template: "from-json" }) }), { hasTools: false })).toBe("from-json");
    expect(selectChatTemplate(files({ "tokenizer_config.json": cfg }), { hasTools: false })).toBe("from-config");
  });
});

describe("strftime", () => {
  it("formats as Python's C locale on a naive datetime", () => {
    const d = new Date("2026-01-05T07:08:09Z");
    expect(strftime(d, "%Y-%m-%d %H:%M:%S %a %A %b %B %-d %j %p %I %y %Z%z %%")).toBe("2026-01-05 07:08:09 Mon Monday Jan January 5 005 AM 07 26  %");
  });
});
