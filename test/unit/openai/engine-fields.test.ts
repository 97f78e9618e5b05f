// The accept/refuse table of the OpenAI-on-VllmEngine path: one row per field. Each row sends
// the field alone (plus what it needs) and says what must happen: accepted, or a 400
// unsupported_parameter naming it; a refused field's default value is accepted.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../../../src/core/errors.js";
import { ENGINE_FIELDS, NESTED_FIELDS, refuseUnsupportedFields, type EngineApi } from "../../../src/api/openai/engine-fields.js";
import { FIELD_ROWS as ROWS, TOOLS } from "../../support/engine-field-rows.js";

type Body = Record<string, unknown>;

function refusal(api: EngineApi, body: Body): GatewayError | undefined {
  try {
    refuseUnsupportedFields(api, body);
    return undefined;
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
}

const allFields = [...Object.keys(ENGINE_FIELDS), ...Object.entries(NESTED_FIELDS).flatMap(([k, rows]) => Object.keys(rows).map((s) => `${k}.${s}`))];

const C = "chat" as const;
const P = "completions" as const;

describe("one row per field", () => {
  it("every field of the table has a row here, and no row names a field the table lacks", () => {
    expect(Object.keys(ROWS).sort()).toEqual([...allFields].sort());
  });

  for (const [field, [api, accepted, refused]] of Object.entries(ROWS)) {
    it(`${field}: ${refused ? "refused unless default" : "accepted"}`, () => {
      expect(refusal(api, accepted)).toBeUndefined();
      if (!refused) return;
      const err = refusal(api, refused);
      expect(err?.status).toBe(400);
      expect(err?.code).toBe("unsupported_parameter");
      const param = field === "tools" || field === "tool_choice" || field.startsWith("structured_outputs.") || field === "chat_template_kwargs" ? undefined : field;
      if (param) expect(err?.param).toBe(param);
      expect(err?.message).toContain(`${err?.param}: not supported for a model served by VllmEngine engines`);
    });
  }
});

describe("the rules around the table", () => {
  it("null and absent pass for every field", () => {
    for (const field of Object.keys(ENGINE_FIELDS)) {
      const api = ENGINE_FIELDS[field]!.api === "completions" ? P : C;
      expect(refusal(api, { [field]: null })).toBeUndefined();
    }
  });

  it("tools, tool_choice and the thinking switch are taken (docs/tools.md); the deprecated functions form is refused by name", () => {
    expect(refusal(C, { tools: TOOLS, tool_choice: { type: "function", function: { name: "f" } } })).toBeUndefined();
    expect(refusal(C, { chat_template_kwargs: { enable_thinking: true } })).toBeUndefined();
    expect(refusal(C, { functions: [{ name: "f" }] })?.param).toBe("functions");
    expect(refusal(C, { function_call: { name: "f" } })?.param).toBe("function_call");
  });

  it("an unknown field is refused by name, top-level or nested; a field of the other API is refused on this one", () => {
    const unknown = refusal(C, { temperature: 1, frobnicate: true });
    expect(unknown).toMatchObject({ code: "unsupported_parameter", param: "frobnicate" });
    expect(unknown?.message).toMatch(/does not know this field/);
    expect(refusal(C, { stream: true, stream_options: { include_usage: true, x: 1 } })?.param).toBe("stream_options.x");
    expect(refusal(C, { structured_outputs: { regex: "a", nope: 1 } })?.param).toBe("structured_outputs.nope");
    expect(refusal(P, { messages: [] })?.param).toBe("messages");
    expect(refusal(C, { prompt: "x" })?.param).toBe("prompt");
    expect(refusal(C, { suffix: "x" })?.param).toBe("suffix");
  });

  it("the first problem in the body's order is the one reported", () => {
    expect(refusal(C, { priority: 1, bad_words: ["x"] })?.param).toBe("priority");
    expect(refusal(C, { bad_words: ["x"], priority: 1 })?.param).toBe("bad_words");
  });
});

describe("docs/architecture.md shows the same table", () => {
  const doc = readFileSync(new URL("../../../docs/architecture.md", import.meta.url), "utf8");
  const section = doc.slice(doc.indexOf("## Accept or refuse"));
  for (const field of allFields) {
    it(field, () => {
      expect(section).toContain(`\`${field}\``);
    });
  }
});
