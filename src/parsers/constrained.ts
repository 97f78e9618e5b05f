// Reading output the engine produced under a tool constraint (tool-choice.ts): for a named
// function the whole text is that function's arguments (vLLM passes it on as written); for
// `required` it is a JSON array of {"name", "parameters"}, each element a call as soon as it
// is complete. An array that breaks off keeps the calls before the break; one with no call at
// all is content, as the upstream gateway's parse_json_schema_response falls back.
import { callFromJsonObject, INCOMPLETE, jsonObjectMembers, scanJsonValue } from "./json-text.js";
import { skipWhitespace } from "./text-scan.js";
import type { ParsedCall } from "./types.js";

export type ConstrainedOutput = { kind: "named"; name: string } | { kind: "array" };

export class ArrayCallsReader {
  /** All text seen (content when no call came of it). */
  raw = "";
  calls = 0;
  private pos = 0;
  private state: "open" | "element" | "separator" | "done" = "open";

  /** The calls settled once `text` arrived. */
  push(text: string, final: boolean): ParsedCall[] {
    this.raw += text;
    const out: ParsedCall[] = [];
    for (;;) {
      const s = this.raw;
      const i = skipWhitespace(s, this.pos);
      if (this.state === "done" || i >= s.length) return out;
      if (this.state === "open") {
        if (s[i] !== "[") return this.stop(out);
        this.pos = i + 1;
        this.state = "element";
      } else if (this.state === "separator") {
        if (s[i] === ",") this.state = "element";
        else this.state = "done"; // "]" or anything else ends the calls
        this.pos = i + 1;
      } else {
        const end = scanJsonValue(s, i, final);
        if (end === INCOMPLETE) return final ? this.stop(out) : out;
        const element = end < 0 ? "" : s.slice(i, end);
        const call = jsonObjectMembers(element)?.has("parameters") ? callFromJsonObject(element, ["parameters"]) : undefined;
        if (!call) return this.stop(out);
        out.push(call);
        this.calls++;
        this.pos = end;
        this.state = "separator";
      }
    }
  }

  private stop(out: ParsedCall[]): ParsedCall[] {
    this.state = "done";
    return out;
  }
}
