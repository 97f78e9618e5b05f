// Qwen3-Coder / Qwen3.5 XML calls (upstream: smg crates/tool_parser/src/parsers/qwen_xml.rs,
// vLLM qwen3coder_tool_parser.py):
//   <tool_call>
//   <function=NAME>
//   <parameter=KEY>
//   VALUE
//   </parameter>
//   </function>
//   </tool_call>
// Values are text; each becomes JSON by the parameter's declared type in the request's
// tools (as smg's coerce_by_schema_type), else by what it looks like (JSON, Python's
// True/False/None, or a string).
import { minifyJson, scanJsonValue } from "../json-text.js";
import type { ToolFormat } from "../tool-format.js";
import type { ToolSpec } from "../types.js";
import { taggedScanner } from "./tagged.js";

// A name never spans a line or another tag (`<function=f\n</function>` is no call), and a
// value missing its </parameter> ends at the next <parameter= or </function>, as vLLM reads them.
const FUNCTION = /<function=([^<>\n]+)>/;
const PARAMETER = /<parameter=([^>]+)>([\s\S]*?)(?:<\/parameter>|(?=<parameter=)|(?=<\/function>))/g;

function asJson(text: string): string | undefined {
  return text !== "" && scanJsonValue(text, 0, true) === text.length ? minifyJson(text) : undefined;
}

/** The JSON text of a parameter's value by its declared type; undefined: infer it. */
function byType(text: string, type: unknown): string | undefined {
  switch (type) {
    case "string": {
      const json = asJson(text);
      return json?.startsWith('"') ? json : JSON.stringify(text);
    }
    case "integer":
      return /^-?\d+$/.test(text) ? text.replace(/^(-?)0+(?=\d)/, "$1") : undefined;
    case "number": {
      const json = asJson(text);
      return json !== undefined && /^-?\d/.test(json) ? json : undefined;
    }
    case "boolean":
      return text === "true" || text === "True" ? "true" : text === "false" || text === "False" ? "false" : undefined;
    case "object":
    case "array":
      return asJson(text);
    default:
      return undefined;
  }
}

export function xmlValue(raw: string, type: unknown): string {
  const text = raw.trim();
  const typed = byType(text, type);
  if (typed !== undefined) return typed;
  const json = asJson(text);
  if (json !== undefined) return json;
  if (text === "True") return "true";
  if (text === "False") return "false";
  if (text === "None") return "null";
  return JSON.stringify(text);
}

function declaredTypes(tools: readonly ToolSpec[], name: string): Record<string, unknown> {
  const props = tools.find((t) => t.name === name)?.parameters?.properties;
  if (typeof props !== "object" || props === null) return {};
  return Object.fromEntries(Object.entries(props as Record<string, { type?: unknown }>).map(([k, s]) => [k, s?.type]));
}

export function parseXmlCall(body: string, tools: readonly ToolSpec[]) {
  const fn = FUNCTION.exec(body);
  const name = fn?.[1]?.trim();
  if (!name) return undefined;
  const types = declaredTypes(tools, name);
  const members: string[] = [];
  const seen = new Set<string>();
  for (const [, key, value] of body.matchAll(PARAMETER)) {
    const k = key!.trim();
    if (seen.has(k)) continue;
    seen.add(k);
    members.push(`${JSON.stringify(k)}:${xmlValue(value!, types[k])}`);
  }
  return [{ name, arguments: `{${members.join(",")}}` }];
}

export const qwen3Coder: ToolFormat = {
  name: "qwen3_coder",
  specialTokens: [],
  scanner: (tools) => taggedScanner({ open: "<tool_call>", close: "</tool_call>", parseBody: (b) => parseXmlCall(b, tools) }),
};
