// The sim's own versions of the vLLM OpenAI server's output parsers: `--reasoning-parser
// qwen3` (vllm/reasoning/qwen3_reasoning_parser.py) and `--tool-call-parser hermes`
// (vllm/tool_parsers/hermes_tool_parser.py). Written from vLLM's source, not shared with the
// gateway's parsers (src/), so the two can disagree and a test shows it.
import { randomUUID } from "node:crypto";

const THINK = "<think>";
const END_THINK = "</think>";
const TOOL = "<tool_call>";
const END_TOOL = "</tool_call>";

export interface FunctionCall {
  name: string;
  arguments: string;
}

/** vLLM's make_tool_call_id (the default "random" kind). */
export function toolCallId(): string {
  return `chatcmpl-tool-${randomUUID().replace(/-/g, "")}`;
}

/** Python's json.dumps(v, ensure_ascii=False): ", " and ": " separators. */
export function pyJsonDumps(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(pyJsonDumps).join(", ")}]`;
  if (typeof v === "object" && v !== null) {
    return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pyJsonDumps(x)}`).join(", ")}}`;
  }
  return JSON.stringify(v);
}

/** Qwen3ReasoningParser.extract_reasoning: `<think>` is dropped; before `</think>` is reasoning.
 *  Without `</think>` the whole output is reasoning (a truncated thought) unless thinking is
 *  off, or a `<tool_call>` followed by `<function` ends it implicitly. */
export function qwen3Split(text: string, thinking: boolean): { reasoning: string | null; content: string | null } {
  const at = text.indexOf(THINK);
  const out = at >= 0 ? text.slice(at + THINK.length) : text;
  const end = out.indexOf(END_THINK);
  if (end >= 0) {
    const content = out.slice(end + END_THINK.length);
    return { reasoning: out.slice(0, end), content: content === "" ? null : content };
  }
  if (!thinking) return { reasoning: null, content: out };
  const tc = out.indexOf(TOOL);
  if (tc >= 0 && /^<function[\s=]/.test(out.slice(tc + TOOL.length).trimStart())) {
    return { reasoning: out.slice(0, tc) || null, content: out.slice(tc) || null };
  }
  return { reasoning: out, content: null };
}

/** Streaming qwen3: deltas before `</think>` are reasoning, after it content. (The implicit
 *  end at `<tool_call><function…` is not modelled when streaming.) */
export class Qwen3Stream {
  private inReasoning: boolean;

  constructor(thinking: boolean) {
    this.inReasoning = thinking;
  }

  feed(delta: string): { reasoning?: string; content?: string } {
    if (!this.inReasoning) return delta === "" ? {} : { content: delta };
    const d = delta.replace(THINK, "");
    const end = d.indexOf(END_THINK);
    if (end < 0) return d === "" ? {} : { reasoning: d };
    this.inReasoning = false;
    const reasoning = d.slice(0, end);
    const content = d.slice(end + END_THINK.length);
    return { ...(reasoning ? { reasoning } : {}), ...(content ? { content } : {}) };
  }
}

/** Hermes2ProToolParser.extract_tool_calls: every `<tool_call>{json}</tool_call>` (or an
 *  unclosed last one) becomes a call with its arguments re-serialised by json.dumps; content is
 *  the text before the first tag (text after the calls is dropped). Any bad JSON, or a call
 *  without name or arguments: no calls, the whole text is content. */
export function hermesExtract(text: string): { calls: FunctionCall[]; content: string | null } {
  if (!text.includes(TOOL)) return { calls: [], content: text };
  try {
    const calls = [...text.matchAll(/<tool_call>([\s\S]*?)<\/tool_call>|<tool_call>([\s\S]*)/g)].map((m) => {
      const v = JSON.parse(m[1] ?? m[2]!) as Record<string, unknown>;
      if (typeof v.name !== "string" || !("arguments" in v)) throw new Error("not a call");
      return { name: v.name, arguments: pyJsonDumps(v.arguments) };
    });
    const content = text.slice(0, text.indexOf(TOOL));
    return { calls, content: content === "" ? null : content };
  } catch {
    return { calls: [], content: text };
  }
}

/** Length of the longest suffix of `text` that is a prefix of `tag` (utils.partial_tag_overlap). */
export function partialTagOverlap(text: string, tag: string): number {
  for (let n = Math.min(text.length, tag.length - 1); n > 0; n--) if (tag.startsWith(text.slice(-n))) return n;
  return 0;
}

export interface DeltaToolCall {
  index: number;
  id?: string;
  type?: "function";
  function: { name?: string; arguments?: string };
}

/** The `arguments` value of a (maybe partial) call's JSON, by brace matching: exactly the
 *  model's own text, never re-serialised (so streamed arguments can differ from non-streamed). */
function argsOf(json: string, complete: boolean): string | undefined {
  const m = /"arguments"\s*:\s*/.exec(json);
  if (!m) return undefined;
  let raw = json.slice(m.index + m[0].length);
  if (raw === "" || !"{[".includes(raw[0]!)) {
    if (complete) raw = raw.trimEnd().replace(/\}$/, "").trimEnd();
    return raw;
  }
  const close = raw[0] === "{" ? "}" : "]";
  let depth = 0;
  let inStr = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (inStr) {
      if (c === "\\") i++;
      else if (c === '"') inStr = false;
    } else if (c === '"') inStr = true;
    else if (c === raw[0]) depth++;
    else if (c === close && --depth === 0) return raw.slice(0, i + 1);
  }
  return raw;
}

function isCompleteJson(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

/** Hermes2ProToolParser.extract_tool_calls_streaming: re-reads the whole text on each delta and
 *  sends what is new: content before the first `<tool_call>` (holding back a partial tag), then
 *  per call its name (with id and type) and argument text as it grows. */
export class HermesStream {
  private text = "";
  private sentContent = 0;
  private readonly calls: { name?: string; args: string }[] = [];

  feed(delta: string): { content?: string; tool_calls?: DeltaToolCall[] } | undefined {
    this.text += delta;
    const content = this.content();
    const deltas: DeltaToolCall[] = [];
    this.regions().forEach(([json, complete], i) => {
      const call = (this.calls[i] ??= { args: "" });
      if (call.name === undefined) {
        const name = /"name"\s*:\s*"([^"]+)"/.exec(json)?.[1];
        if (!name) return;
        call.name = name;
        deltas.push({ index: i, type: "function", id: toolCallId(), function: { name } });
      }
      const args = argsOf(json, complete);
      if (args !== undefined && args.length > call.args.length) {
        deltas.push({ index: i, function: { arguments: args.slice(call.args.length) } });
        call.args = args;
      }
    });
    if (!content && deltas.length === 0) return undefined;
    return { ...(content ? { content } : {}), ...(deltas.length ? { tool_calls: deltas } : {}) };
  }

  private content(): string | undefined {
    const at = this.text.indexOf(TOOL);
    const sendable = at >= 0 ? at : this.text.length - partialTagOverlap(this.text, TOOL);
    if (sendable <= this.sentContent) return undefined;
    const out = this.text.slice(this.sentContent, sendable);
    this.sentContent = sendable;
    return out;
  }

  private regions(): [string, boolean][] {
    const out: [string, boolean][] = [];
    let pos = 0;
    for (;;) {
      const start = this.text.indexOf(TOOL, pos);
      if (start < 0) return out;
      const from = start + TOOL.length;
      const end = this.text.indexOf(END_TOOL, from);
      if (end >= 0) {
        out.push([this.text.slice(from, end).trim(), true]);
        pos = end + END_TOOL.length;
        continue;
      }
      let raw = this.text.slice(from);
      const overlap = partialTagOverlap(raw, END_TOOL);
      if (overlap) raw = raw.slice(0, -overlap);
      const json = raw.trim();
      out.push([json, json !== "" && isCompleteJson(json)]);
      return out;
    }
  }
}
