// The JSON Schema of GATEWAY_CONFIG (schema/gateway-config.schema.json) is generated from the
// zod schema (scripts/config-json-schema.ts): the committed file must be what the generator
// writes now, and it must say what the loader enforces.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { gatewayConfigJsonSchema, renderJsonSchema, SCHEMA_PATH } from "../../scripts/config-json-schema.js";
import { parseConfig } from "../../src/config/load.js";
import { gatewayConfigSchema } from "../../src/config/schema.js";

type Node = Record<string, unknown> & { properties?: Record<string, Node>; $defs?: Record<string, Node> };

describe("GATEWAY_CONFIG JSON Schema", () => {
  it("is up to date (run `npm run generate:schema` after changing src/config/schema.ts)", () => {
    expect(readFileSync(SCHEMA_PATH, "utf8")).toBe(renderJsonSchema());
  });

  it("refuses unknown keys and wants models, like the loader", () => {
    const s = gatewayConfigJsonSchema() as Node;
    expect(s.additionalProperties).toBe(false);
    expect(s.required).toEqual(["models"]);
    const engine = s.$defs!.engine!;
    expect(engine.additionalProperties).toBe(false);
    expect(engine.required).toEqual(["url"]);
    expect(engine.properties!.url).toMatchObject({ format: "uri", pattern: "^https?://" });
    expect(s.$defs!.model!.additionalProperties).toBe(false);
  });

  it("shows the defaults the loader fills in", () => {
    const s = gatewayConfigJsonSchema() as Node;
    const parsed = gatewayConfigSchema.parse({ models: {} }) as Record<string, unknown>;
    for (const section of ["limits", "pd", "health", "breaker", "retry", "registry", "loads", "auth", "cors", "debug"]) {
      expect(s.properties![section]!.default, section).toEqual(parsed[section]);
    }
  });

  it("carries the field docs of schema.ts and the rules JSON Schema cannot express", () => {
    const s = gatewayConfigJsonSchema() as Node;
    expect(s.$defs!.engine!.properties!.binding!.description).toMatch(/Workers VPC service/);
    expect(s.properties!.pd!.properties!.stream_keepalive_ms!.description).toMatch(/Also: 0 \(off\) or at least 50\./);
  });

  it("lets a config document name its schema with $schema", () => {
    const c = parseConfig(JSON.stringify({ $schema: "./schema/gateway-config.schema.json", models: {} }));
    expect(c.models).toEqual({});
    expect((gatewayConfigJsonSchema() as Node).properties!.$schema).toMatchObject({ type: "string" });
  });
});
