// `npm run generate:schema`: writes schema/gateway-config.schema.json, the JSON Schema of
// GATEWAY_CONFIG, from the zod schema the gateway parses it with (src/config/schema.ts), for
// editors (completion, defaults, typos flagged) and other validators. test/unit/config-json-schema.test.ts
// regenerates it in memory and fails when the committed file is stale.
//
// The input side of the schema (io: "input"): what a person writes, with every default shown,
// before zod fills the defaults in. Descriptions are the doc comments of schema.ts's fields;
// rules JSON Schema cannot say (a refinement) are added to them. `npm run check-config` stays
// the authority.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import * as z from "zod";
import { configSchemas } from "../src/config/schema.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const SCHEMA_PATH = join(ROOT, "schema", "gateway-config.schema.json");
const ZOD_SOURCE = join(ROOT, "src", "config", "schema.ts");

/** Where each schema variable of schema.ts lands in the generated document. */
const VARIABLE_AT: Record<string, string[]> = {
  gatewayConfigSchema: [],
  modelSchema: ["$defs", "model"],
  engineSchema: ["$defs", "engine"],
  clusterSchema: ["$defs", "cluster"],
  modelPdSchema: ["$defs", "model", "properties", "pd"],
  tokenizerSourceSchema: ["$defs", "model", "properties", "tokenizer"],
};

/** zod's integer bound when none was given: noise in an editor's hover. */
const SAFE_INT_BOUND = Number.MAX_SAFE_INTEGER;

type JsonSchema = Record<string, unknown>;

interface ZodInternals {
  _zod: { def: { checks?: { _zod: { def: { check: string; error?: (issue: object) => unknown } } }[] } };
}

/** Messages of the refinements on a schema (its "custom" checks), which JSON Schema drops. */
function refinementMessages(schema: unknown): string[] {
  const checks = (schema as ZodInternals)._zod.def.checks ?? [];
  return checks
    .filter((c) => c._zod.def.check === "custom")
    .map((c) => c._zod.def.error?.({}))
    .filter((m): m is string => typeof m === "string");
}

/** Adjusts each generated node: the URL protocol rule, no default integer bounds, no zod-only formats. */
function tidy(zodSchema: unknown, json: JsonSchema): void {
  if (json.format === "uri") json.pattern = "^https?://";
  if (json.format === "starts_with") delete json.format;
  if (json.maximum === SAFE_INT_BOUND) delete json.maximum;
  if (json.minimum === -SAFE_INT_BOUND) delete json.minimum;
  const rules = refinementMessages(zodSchema);
  if (rules.length > 0) json.description = `Also: ${rules.join("; ")}.`;
}

/** Each documented field of schema.ts: [variable, property, nested property, ...] and its doc comment. */
function fieldDocs(source: string): { chain: string[]; doc: string }[] {
  const sf = ts.createSourceFile(ZOD_SOURCE, source, ts.ScriptTarget.ES2022, true);
  const found: { chain: string[]; doc: string }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAssignment(node)) {
      const doc = ts
        .getJSDocCommentsAndTags(node)
        .filter(ts.isJSDoc)
        .map((d) => ts.getTextOfJSDocComment(d.comment) ?? "")
        .join(" ")
        .replace(/\s+/g, " ")
        .trim();
      if (doc) {
        const chain: string[] = [];
        let n: ts.Node | undefined = node;
        for (; n && !ts.isVariableDeclaration(n); n = n.parent) if (ts.isPropertyAssignment(n)) chain.unshift(n.name.getText(sf));
        if (n) found.push({ chain: [n.name.getText(sf), ...chain], doc });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Puts each field's doc comment on its node; a field that cannot be found fails the run. */
function describeFields(schema: JsonSchema, docs: { chain: string[]; doc: string }[]): void {
  for (const { chain, doc } of docs) {
    const [variable, ...props] = chain;
    const at = VARIABLE_AT[variable ?? ""];
    if (!at) throw new Error(`config-json-schema: ${chain.join(".")}: add ${variable} to VARIABLE_AT`);
    let node: unknown = schema;
    for (const key of [...at, ...props.flatMap((p) => ["properties", p])]) node = (node as JsonSchema | undefined)?.[key];
    if (typeof node !== "object" || node === null) throw new Error(`config-json-schema: no node for ${chain.join(".")}`);
    const target = node as JsonSchema;
    target.description = typeof target.description === "string" ? `${doc} ${target.description}` : doc;
  }
}

export function gatewayConfigJsonSchema(): JsonSchema {
  const s = configSchemas();
  // Named definitions for the schemas used in several places.
  const names = z.registry<{ id: string }>();
  names.add(s.modelSchema, { id: "model" });
  names.add(s.engineSchema, { id: "engine" });
  names.add(s.clusterSchema, { id: "cluster" });
  names.add(s.policySchema, { id: "policy" });
  const generated = z.toJSONSchema(s.gatewayConfigSchema, {
    io: "input",
    metadata: names,
    override: (ctx) => tidy(ctx.zodSchema, ctx.jsonSchema as JsonSchema),
  }) as JsonSchema;
  describeFields(generated, fieldDocs(readFileSync(ZOD_SOURCE, "utf8")));
  const { $schema, ...rest } = generated;
  return {
    $schema,
    title: "vllm-edge-gateway GATEWAY_CONFIG",
    description:
      "The gateway config (the GATEWAY_CONFIG var of wrangler.toml). Every key and default: docs/configuration.md. " +
      "Generated from src/config/schema.ts by `npm run generate:schema`; `npm run check-config` applies the gateway's own parser.",
    ...rest,
  };
}

/** The file's text: the schema as 2-space JSON with a final newline. */
export function renderJsonSchema(): string {
  return `${JSON.stringify(gatewayConfigJsonSchema(), null, 2)}\n`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(SCHEMA_PATH, renderJsonSchema());
  console.log(`generate:schema: wrote ${SCHEMA_PATH.slice(ROOT.length + 1)}`);
}
