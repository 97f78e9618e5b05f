// DeepSeek V3 (and R1 0528): special-token markup around each call,
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//   ```json
//   {...}
//   ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
// (upstream: smg crates/tool_parser/src/parsers/deepseek.rs, vLLM deepseekv3_tool_parser.py).
// Arguments that are not an object are wrapped as {"value": ...}, as smg does.
import { minifyJson, scanJsonValue } from "../json-text.js";
import type { ToolFormat } from "../tool-format.js";
import { taggedScanner } from "./tagged.js";

const CALLS_BEGIN = "<｜tool▁calls▁begin｜>";
const CALLS_END = "<｜tool▁calls▁end｜>";
const CALL_BEGIN = "<｜tool▁call▁begin｜>";
const CALL_END = "<｜tool▁call▁end｜>";
const SEP = "<｜tool▁sep｜>";
const BODY = /^([^\n]*?)\n```json\n([\s\S]*)\n```$/;

function parseBody(body: string) {
  const sep = body.indexOf(SEP);
  if (sep < 0 || body.slice(0, sep).trim() !== "function") return undefined;
  const m = BODY.exec(body.slice(sep + SEP.length));
  const name = m?.[1]?.trim();
  if (!m || !name) return undefined;
  const raw = m[2]!.trim();
  if (scanJsonValue(raw, 0, true) !== raw.length) return undefined;
  const args = minifyJson(raw);
  return [{ name, arguments: args.startsWith("{") ? args : `{"value":${args}}` }];
}

export const deepseekV3: ToolFormat = {
  name: "deepseek_v3",
  specialTokens: [CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP],
  scanner: () => taggedScanner({ open: CALL_BEGIN, close: CALL_END, drop: [CALLS_BEGIN, CALLS_END], parseBody }),
};
