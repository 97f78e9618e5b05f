// Structured outputs in the sim: an engine given a SamplingParams constraint answers with text
// that satisfies it, as a real engine's grammar-constrained sampling does, so a test can see
// that the gateway passed the constraint on. json_object -> a small object; json_schema -> a
// value built from the schema (const, enum, anyOf/oneOf, type, properties, items, minimum,
// minLength); choice -> one of the choices (picked by the prompt's hash); regex -> a string
// the pattern matches (literals, escapes, classes, groups with alternatives, quantifiers).
// grammar and structural_tag are not modelled: the engine answers as without a constraint.
import type { SamplingParams } from "../src/gen/vllm_engine_pb.js";

type Schema = Record<string, unknown>;

/** The constrained reply, or undefined when the sim does not model this constraint. */
export function constrainedText(c: SamplingParams["constraint"], pick: number): string | undefined {
  switch (c.case) {
    case "jsonObject":
      return '{"answer": "sim"}';
    case "jsonSchema":
      return JSON.stringify(valueOf(JSON.parse(c.value) as Schema, 0));
    case "choice":
      return c.value.choices.length > 0 ? c.value.choices[pick % c.value.choices.length] : undefined;
    case "regex":
      return sampleRegex(c.value);
    default:
      return undefined;
  }
}

function valueOf(s: Schema, depth: number): unknown {
  if ("const" in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  const alt = (s.anyOf ?? s.oneOf ?? s.allOf) as Schema[] | undefined;
  if (Array.isArray(alt) && alt.length > 0) return valueOf(alt[0]!, depth);
  const type = Array.isArray(s.type) ? (s.type[0] as string) : (s.type as string | undefined) ?? (s.properties ? "object" : "string");
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      if (depth > 8) return out;
      for (const [k, sub] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) out[k] = valueOf(sub, depth + 1);
      return out;
    }
    case "array": {
      const n = Math.max(typeof s.minItems === "number" ? s.minItems : 1, 1);
      return depth > 8 ? [] : Array.from({ length: n }, () => valueOf((s.items ?? {}) as Schema, depth + 1));
    }
    case "integer":
    case "number":
      return typeof s.minimum === "number" ? Math.ceil(s.minimum) : 1;
    case "boolean":
      return true;
    case "null":
      return null;
    default: {
      const min = typeof s.minLength === "number" ? s.minLength : 0;
      return "sim".padEnd(Math.max(min, 3), "m");
    }
  }
}

/** One string the pattern matches: the first alternative, each repeat at its least (one for
 *  * and +), the first member of a class. */
export function sampleRegex(pattern: string): string {
  let i = 0;
  const alternation = (): string => {
    const first = sequence();
    while (pattern[i] === "|") {
      i++;
      sequence();
    }
    return first;
  };
  const sequence = (): string => {
    let out = "";
    while (i < pattern.length && pattern[i] !== "|" && pattern[i] !== ")") {
      const atom = atomAt();
      out += atom.repeat(quantifier());
    }
    return out;
  };
  const atomAt = (): string => {
    const ch = pattern[i++]!;
    if (ch === "^" || ch === "$") return "";
    if (ch === ".") return "a";
    if (ch === "(") {
      if (pattern.startsWith("?:", i)) i += 2;
      const inner = alternation();
      i++; // ")"
      return inner;
    }
    if (ch === "[") return classAt();
    if (ch === "\\") return escape(pattern[i++]!);
    return ch;
  };
  const classAt = (): string => {
    const negated = pattern[i] === "^";
    if (negated) i++;
    let first: string | undefined;
    while (i < pattern.length && pattern[i] !== "]") {
      const c = pattern[i] === "\\" ? escape(pattern[++i]!) : pattern[i]!;
      i++;
      first ??= c;
      if (pattern[i] === "-" && pattern[i + 1] !== "]") i += 2;
    }
    i++; // "]"
    return negated ? (first === "q" ? "z" : "q") : (first ?? "");
  };
  const quantifier = (): number => {
    const q = pattern[i];
    if (q === "*" || q === "+" || q === "?") {
      i++;
      if (pattern[i] === "?") i++;
      return 1;
    }
    if (q === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i));
      if (m) {
        i += m[0].length;
        const min = Number(m[1]);
        return min > 0 ? min : m[3] === "0" ? 0 : 1;
      }
    }
    return 1;
  };
  return alternation();
}

function escape(c: string): string {
  switch (c) {
    case "d":
      return "7";
    case "w":
      return "a";
    case "s":
      return " ";
    case "n":
      return "\n";
    case "t":
      return "\t";
    default:
      return c;
  }
}
