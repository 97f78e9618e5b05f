// Chat template rendering as transformers' apply_chat_template does it, on @huggingface/jinja.
// transformers renders in an ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
// loopcontrols, replaces tojson with Python's json.dumps (no HTML escaping), and adds
// raise_exception and strftime_now; the template sees messages, tools, documents,
// add_generation_prompt, the tokenizer's special tokens (bos_token, eos_token, ...) and any extra
// kwargs. The library does the first part; we fix what differs:
//  - tojson: every `x | tojson(...)` in the parsed template is rewritten to call our Python-
//    faithful json.dumps (py-json.ts);
//  - numbers and key order: values may come from parseLosslessJson, and carry Python's printing
//    (1.0 stays 1.0, 1e-07 stays 1e-07) and the client's key order into the template;
//  - raise_exception: a typed ChatTemplateError("raise_exception") with the template's message;
//  - anything the library cannot evaluate: ChatTemplateError("unsupported_feature") naming it.
import { ChatTemplateError } from "./errors.js";
import { JsonNumber, parseLosslessJson, pyFloatRepr, pyNumberRepr, type LosslessJson } from "./lossless-json.js";
import { pyJsonDumps, pyRepr, type PyJsonOptions, type RuntimeLike } from "./py-json.js";
import { specialTokenText } from "./tokenizer.js";
import type { EdgeTokenizer } from "./tokenizer.js";

type Jinja = typeof import("@huggingface/jinja");
type RuntimeValue = RuntimeLike;
type RuntimeCtor = new (value: unknown) => RuntimeValue;

interface Runtime {
  jinja: Jinja;
  Null: RuntimeCtor;
  Undefined: RuntimeCtor;
  Boolean: RuntimeCtor;
  Integer: RuntimeCtor;
  Float: RuntimeCtor;
  String: RuntimeCtor;
  Array: RuntimeCtor;
  Object: RuntimeCtor;
  Function: RuntimeCtor;
}

let runtime: Promise<Runtime> | undefined;

/** Starts loading the template runtime (a cold isolate does it while the bundle downloads). */
export function preloadChatTemplates(): void {
  loadRuntime().catch(() => undefined); // a failure shows where the runtime is used
}

/** Loads @huggingface/jinja on first use and recovers its (unexported) value classes from a
 *  probe environment, so we can build values the library's converter cannot (Maps in order,
 *  numbers that print as Python prints them, functions that see raw runtime arguments). */
function loadRuntime(): Promise<Runtime> {
  return (runtime ??= import("@huggingface/jinja").then((jinja) => {
    const probe = new jinja.Environment();
    const ctorOf = (v: unknown) => (probe.set(`v${probe.variables.size}`, v) as object).constructor as RuntimeCtor;
    return {
      jinja,
      Null: ctorOf(null),
      Undefined: ctorOf(undefined),
      Boolean: ctorOf(true),
      Integer: ctorOf(1),
      Float: ctorOf(1.5),
      String: ctorOf(""),
      Array: ctorOf([]),
      Object: ctorOf({}),
      Function: ctorOf(() => null),
    };
  }));
}

export interface CompiledChatTemplate {
  readonly source: string;
  /** The parsed program with tojson rewritten (opaque). */
  readonly program: unknown;
}

const TOJSON_FN = "__gateway_tojson";

/** Rewrites `x | tojson` / `x | tojson(k=v)` into `__gateway_tojson(x, k=v)`, in place. */
function rewriteToJson(node: unknown): void {
  if (node === null || typeof node !== "object") return;
  if (Array.isArray(node)) {
    node.forEach(rewriteToJson);
    return;
  }
  const n = node as Record<string, unknown>;
  if (n.type === "FilterExpression") {
    const filter = n.filter as { type: string; value?: string; callee?: { type: string; value: string }; args?: unknown[] };
    const isToJson =
      (filter.type === "Identifier" && filter.value === "tojson") ||
      (filter.type === "CallExpression" && filter.callee?.type === "Identifier" && filter.callee.value === "tojson");
    if (isToJson) {
      const operand = n.operand;
      const args = filter.type === "CallExpression" ? (filter.args ?? []) : [];
      for (const k of Object.keys(n)) delete n[k];
      Object.assign(n, { type: "CallExpression", callee: { type: "Identifier", value: TOJSON_FN }, args: [operand, ...args] });
    }
  }
  for (const v of Object.values(n)) rewriteToJson(v);
}

/** Parses a template once (cache the result per bundle; parsing is the costly part). */
export async function compileChatTemplate(source: string): Promise<CompiledChatTemplate> {
  const { jinja } = await loadRuntime();
  let program: unknown;
  try {
    program = new jinja.Template(source).parsed;
  } catch (err) {
    throw unsupported(err);
  }
  rewriteToJson(program);
  return { source, program };
}

export interface ChatRenderInput {
  /** OpenAI messages, as plain objects or as parseLosslessJson output (Maps). */
  messages: readonly unknown[];
  tools?: readonly unknown[] | null;
  documents?: readonly unknown[] | null;
  addGenerationPrompt?: boolean;
  /** Render the last (assistant) message open-ended so the model continues it (prefill). */
  continueFinalMessage?: boolean;
  /** chat_template_kwargs (e.g. enable_thinking); they override the special tokens. */
  kwargs?: Record<string, unknown>;
  /** tokenizer_config.json: the special-token variables. */
  tokenizerConfig?: Readonly<Record<string, unknown>>;
  /** The clock strftime_now reads (tests pin it). */
  now?: Date;
}

class TemplateRaise extends Error {}

/** Renders a chat into the prompt text. Throws ChatTemplateError, never a library error. */
export async function renderChatTemplate(template: CompiledChatTemplate, input: ChatRenderInput): Promise<string> {
  const rt = await loadRuntime();
  const addGenerationPrompt = input.addGenerationPrompt ?? false;
  if (input.continueFinalMessage && addGenerationPrompt) {
    throw new ChatTemplateError("invalid_request", "continue_final_message and add_generation_prompt cannot both be set");
  }
  const messages = input.messages.map(parseToolCallArguments);
  const env = new rt.jinja.Environment();
  const declare = (name: string, value: RuntimeValue) => {
    env.variables.set(name, value as never);
  };
  for (const [name, v] of [["false", false], ["true", true], ["none", null], ["False", false], ["True", true], ["None", null]] as const) {
    declare(name, toRuntime(rt, v));
  }
  declare("raise_exception", fn(rt, (args) => {
    throw new TemplateRaise(String(args[0]?.value ?? ""));
  }));
  const now = input.now ?? new Date();
  declare("strftime_now", fn(rt, (args) => new rt.String(strftime(now, String(args[0]?.value ?? "")))));
  declare("range", fn(rt, (args) => toRuntime(rt, pyRange(args.map((a) => a.value as number)))));
  declare(TOJSON_FN, fn(rt, (args) => new rt.String(pyJsonDumps(args[0] ?? new rt.Undefined(undefined), toJsonOptions(args.slice(1))))));
  const vars: Record<string, unknown> = {
    ...specialTokenVariables(input.tokenizerConfig ?? {}),
    ...(input.kwargs ?? {}),
    messages,
    tools: input.tools ?? null,
    documents: input.documents ?? null,
    add_generation_prompt: addGenerationPrompt,
  };
  for (const [k, v] of Object.entries(vars)) declare(k, toRuntime(rt, v));

  let rendered: string;
  try {
    const out = new rt.jinja.Interpreter(env).run(template.program as never) as unknown as { value: string };
    rendered = out.value;
  } catch (err) {
    if (err instanceof TemplateRaise) throw new ChatTemplateError("raise_exception", err.message, undefined, { cause: err });
    if (err instanceof ChatTemplateError) throw err;
    throw unsupported(err);
  }
  return input.continueFinalMessage ? cutAfterFinalMessage(rendered, messages) : rendered;
}

/** The prompt's token ids: the rendered text already holds BOS and friends, so no special
 *  tokens are added again (transformers' apply_chat_template(tokenize=True) does the same). */
export function encodeChatPrompt(tokenizer: Pick<EdgeTokenizer, "encode">, prompt: string): number[] {
  return tokenizer.encode(prompt, { addSpecialTokens: false });
}

/** transformers' special_tokens_map: the set special tokens of tokenizer_config.json. */
export function specialTokenVariables(config: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]) {
    const text = specialTokenText(config[key]);
    if (text !== undefined) out[key] = text;
  }
  const extra = config.additional_special_tokens;
  if (Array.isArray(extra) && extra.length > 0) out.additional_special_tokens = extra.map(specialTokenText).filter((t) => t !== undefined);
  return out;
}

// ---- helpers ----

function fn(rt: Runtime, impl: (args: RuntimeValue[]) => RuntimeValue): RuntimeValue {
  return new rt.Function(impl);
}

function withPyRepr(v: RuntimeValue, repr: string): RuntimeValue {
  // Python prints the number this way both in json.dumps and in {{ x }}.
  v.pyRepr = repr;
  Object.defineProperty(v, "toString", { value: () => repr });
  return v;
}

/** {{ some_list }} prints Python's str(list), not JSON. */
function printsAsPython(v: RuntimeValue): RuntimeValue {
  Object.defineProperty(v, "toString", { value: () => pyRepr(v) });
  return v;
}

function toRuntime(rt: Runtime, v: unknown): RuntimeValue {
  if (v === null) return new rt.Null(null);
  if (v === undefined) return new rt.Undefined(undefined);
  if (typeof v === "boolean") return new rt.Boolean(v);
  if (typeof v === "string") return new rt.String(v);
  if (typeof v === "number") return Number.isInteger(v) ? new rt.Integer(v) : withPyRepr(new rt.Float(v), pyFloatRepr(v));
  if (v instanceof JsonNumber) {
    return v.isFloat ? withPyRepr(new rt.Float(v.value), pyNumberRepr(v)) : withPyRepr(new rt.Integer(v.value), pyNumberRepr(v));
  }
  if (Array.isArray(v)) return printsAsPython(new rt.Array(v.map((x) => toRuntime(rt, x))));
  if (v instanceof Map) return printsAsPython(new rt.Object(new Map([...v].map(([k, x]) => [String(k), toRuntime(rt, x)]))));
  if (typeof v === "object") return printsAsPython(new rt.Object(new Map(Object.entries(v).map(([k, x]) => [k, toRuntime(rt, x)]))));
  throw new ChatTemplateError("invalid_request", `cannot pass a ${typeof v} to a chat template`);
}

function toJsonOptions(args: RuntimeValue[]): PyJsonOptions {
  const kw = args.find((a) => a.type === "KeywordArgumentsValue");
  const positional = args.filter((a) => a !== kw);
  const get = (name: string, pos: number): unknown => ((kw?.value as Map<string, RuntimeValue> | undefined)?.get(name) ?? positional[pos])?.value;
  const separators = get("separators", 2);
  return {
    ensureAscii: Boolean(get("ensure_ascii", 0) ?? false),
    indent: (get("indent", 1) as number | string | null | undefined) ?? null,
    separators: Array.isArray(separators) ? [String((separators[0] as RuntimeValue).value), String((separators[1] as RuntimeValue).value)] : null,
    sortKeys: Boolean(get("sort_keys", 3) ?? false),
  };
}

function pyRange(a: number[]): number[] {
  const [start, stop, step] = a.length === 1 ? [0, a[0]!, 1] : [a[0]!, a[1]!, a[2] ?? 1];
  if (step === 0) throw new ChatTemplateError("invalid_request", "range() arg 3 must not be zero");
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

function field(obj: unknown, key: string): unknown {
  if (obj instanceof Map) return obj.get(key);
  if (typeof obj === "object" && obj !== null) return (obj as Record<string, unknown>)[key];
  return undefined;
}

function withField(obj: unknown, key: string, value: unknown): unknown {
  if (obj instanceof Map) return new Map(obj).set(key, value as LosslessJson);
  return { ...(obj as Record<string, unknown>), [key]: value };
}

/** vLLM hands templates tool-call arguments as dicts (json.loads of the OpenAI string; empty -> {}). */
function parseToolCallArguments(message: unknown): unknown {
  const calls = field(message, "tool_calls");
  if (field(message, "role") !== "assistant" || !Array.isArray(calls)) return message;
  const parsed = calls.map((call, i) => {
    const f = field(call, "function");
    if (f === undefined || f === null) return call;
    const args = field(f, "arguments");
    let value: unknown = args;
    if (args === undefined || args === null || args === "") value = new Map();
    else if (typeof args === "string") {
      try {
        value = parseLosslessJson(args);
      } catch (err) {
        throw new ChatTemplateError("invalid_request", `messages[].tool_calls[${i}].function.arguments: not valid JSON (${(err as Error).message})`);
      }
    }
    return withField(call, "function", withField(f, "arguments", value));
  });
  return withField(message, "tool_calls", parsed);
}

/** transformers' continue_final_message: cut the render right after the final message's text. */
function cutAfterFinalMessage(rendered: string, messages: readonly unknown[]): string {
  let content = field(messages[messages.length - 1], "content");
  if (Array.isArray(content)) {
    const part = [...content].reverse().find((p) => typeof field(p, "text") === "string");
    content = part === undefined ? undefined : field(part, "text");
  }
  if (typeof content !== "string") {
    throw new ChatTemplateError("invalid_request", "continue_final_message is set but the final message has no text to continue");
  }
  const stripped = content.trim();
  const at = rendered.lastIndexOf(stripped);
  if (at < 0) {
    throw new ChatTemplateError("invalid_request", "continue_final_message is set but the final message does not appear in the rendered chat");
  }
  const lstripped = content.replace(/^\s+/, "");
  if (rendered.slice(at, at + lstripped.length) === content) return rendered.slice(0, at + lstripped.length);
  return rendered.slice(0, at + stripped.length);
}

const FEATURE_PATTERNS: [RegExp, (m: RegExpExecArray) => string][] = [
  [/Unknown (\w+) filter: (\w+)/, (m) => `filter "${m[2]}" on ${m[1]}`],
  [/Cannot apply filter "(\w+)" to type: (\w+)/, (m) => `filter "${m[1]}" on ${m[2]}`],
  [/Unknown test: (\w+)/, (m) => `test "${m[1]}"`],
  [/Unknown statement(?: type)?:? (?:got )?(\w+)/, (m) => `statement "${m[1]}"`],
  [/Unknown (operator|node type|expression type)\s*"?([^"]*)"?/, (m) => `${m[1]} ${m[2]}`],
  [/Cannot call something that is not a function: got (\w+)/, (m) => `call of ${m[1]}`],
  [/(\w+) is not a function|unknown function (\w+)/i, (m) => `function ${m[1] ?? m[2]}`],
];

function unsupported(err: unknown): ChatTemplateError {
  const message = err instanceof Error ? err.message : String(err);
  let feature = "template construct";
  for (const [re, name] of FEATURE_PATTERNS) {
    const m = re.exec(message);
    if (m) {
      feature = name(m);
      break;
    }
  }
  return new ChatTemplateError("unsupported_feature", `the model's chat template uses a feature the gateway cannot render (${feature}): ${message}`, feature, { cause: err });
}

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/** Python's datetime.strftime in the C locale on a naive datetime (transformers calls
 *  datetime.now(), so %Z and %z are empty), read in UTC (a Worker's clock); %-d style no-pad flags
 *  as glibc has them (Llama templates use "%-d"). */
export function strftime(d: Date, format: string): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  const dayOfYear = Math.floor((Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1;
  const h12 = d.getUTCHours() % 12 === 0 ? 12 : d.getUTCHours() % 12;
  const codes: Record<string, [string, string]> = {
    a: [DAYS[d.getUTCDay()]!.slice(0, 3), ""], A: [DAYS[d.getUTCDay()]!, ""],
    b: [MONTHS[d.getUTCMonth()]!.slice(0, 3), ""], B: [MONTHS[d.getUTCMonth()]!, ""], h: [MONTHS[d.getUTCMonth()]!.slice(0, 3), ""],
    d: [pad(d.getUTCDate()), String(d.getUTCDate())], e: [String(d.getUTCDate()).padStart(2, " "), String(d.getUTCDate())],
    m: [pad(d.getUTCMonth() + 1), String(d.getUTCMonth() + 1)], y: [pad(d.getUTCFullYear() % 100), String(d.getUTCFullYear() % 100)],
    Y: [String(d.getUTCFullYear()), String(d.getUTCFullYear())], H: [pad(d.getUTCHours()), String(d.getUTCHours())],
    I: [pad(h12), String(h12)], M: [pad(d.getUTCMinutes()), String(d.getUTCMinutes())], S: [pad(d.getUTCSeconds()), String(d.getUTCSeconds())],
    p: [d.getUTCHours() < 12 ? "AM" : "PM", ""], j: [pad(dayOfYear, 3), String(dayOfYear)], Z: ["", ""], z: ["", ""], "%": ["%", ""],
  };
  return format.replace(/%(-?)([a-zA-Z%])/g, (all, noPad: string, c: string) => {
    const v = codes[c];
    if (!v) return all;
    return noPad && v[1] !== "" ? v[1] : v[0];
  });
}
