// The code table (core/error-codes.ts): every stable code the gateway emits has an entry, each
// entry gives the Connect code a Connect or gRPC-web client gets, and docs/api.md (or
// docs/admin.md for the admin API) lists every code of the table.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { connectCodeFor, connectMappingOf, ERROR_CODES, LEG_CODE_PREFIXES, LEG_CODE_SUFFIXES } from "../../../src/core/error-codes.js";
import { GatewayError } from "../../../src/core/errors.js";

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "gen" ? [] : sources(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

const CODE = String.raw`"([a-z]+(?:_[a-z]+)+)"`;
/** Where a stable code is written in src/: the code argument of an error, of a refusal, of a
 *  field check's helper, or a `code` / `errorCode` value. */
const LITERAL_SITES = [
  new RegExp(String.raw`new (?:GatewayError|UpstreamStatusError)\(\s*${CODE}`, "g"),
  new RegExp(String.raw`reject\([^,]+,\s*\d{3},\s*${CODE}`, "g"),
  // invalid(message, param, code): the param is a field path, a variable or null.
  new RegExp(String.raw`\binvalid\(.*,\s*(?:"[\w.\[\]]*"|[\w.]+|\`[^\`\s]*\`),\s*${CODE}\)`, "g"),
  new RegExp(String.raw`\b(?:code|errorCode|startCode)\s*[:=]\s*(?:[^;\n]*\?\s*)?${CODE}`, "g"),
  new RegExp(String.raw`\bcode: ${CODE}(?: \| ${CODE})*`, "g"),
];
/** A leg's code built from its prefix: `${leg}_timeout`, `${this.o.leg}_event_too_large`. */
const LEG_TEMPLATE = /`\$\{[^}]+\}_([a-z]+(?:_[a-z]+)*)`/g;

function emittedCodes(): { literals: Set<string>; legSuffixes: Set<string> } {
  const literals = new Set<string>();
  const legSuffixes = new Set<string>();
  for (const file of sources("src")) {
    const text = readFileSync(file, "utf8");
    for (const re of LITERAL_SITES) {
      for (const m of text.matchAll(re)) for (const code of m.slice(1)) if (code) literals.add(code);
    }
    for (const m of text.matchAll(LEG_TEMPLATE)) legSuffixes.add(m[1]!);
  }
  return { literals, legSuffixes };
}

describe("every code the gateway emits is in the table", () => {
  const { literals, legSuffixes } = emittedCodes();

  it("the scan finds the codes of every layer (it is not looking at nothing)", () => {
    for (const code of ["no_healthy_engine", "config_invalid", "body_too_large", "rate_limited", "invalid_api_key", "admin_unauthorized", "route_not_found", "context_length_exceeded", "engine_failed_to_start", "client_cancelled", "engine_exists", "invalid_engine_url", "invalid_json", "chat_template_unsupported", "prompt_run_too_long"]) {
      expect(literals, code).toContain(code);
    }
    for (const suffix of ["timeout", "worker_failed_to_start", "stream_error", "request_failed", "read_failed"]) expect(legSuffixes, suffix).toContain(suffix);
  });

  it("each literal code has an entry", () => {
    // Words that match the scan and are not error codes (a status name, a decision).
    const notCodes = new Set(["not_ready", "half_open", "prefill_busy"]);
    const missing = [...literals].filter((c) => !notCodes.has(c) && connectMappingOf(c) === undefined);
    expect(missing).toEqual([]);
  });

  it("each leg code suffix has an entry", () => {
    expect([...legSuffixes].filter((s) => !Object.hasOwn(LEG_CODE_SUFFIXES, s))).toEqual([]);
  });
});

describe("the Connect code each gateway code reaches a client as", () => {
  it.each([
    // code, HTTP status, Connect code
    ["invalid_request", 400, Code.InvalidArgument],
    ["invalid_envelope", 400, Code.InvalidArgument],
    ["unsupported_content_type", 415, Code.InvalidArgument],
    ["unsupported_parameter", 400, Code.InvalidArgument],
    ["context_length_exceeded", 400, Code.InvalidArgument],
    ["body_too_large", 413, Code.ResourceExhausted],
    ["headers_too_large", 431, Code.ResourceExhausted],
    ["rate_limited", 429, Code.ResourceExhausted],
    ["abort_rate_limited", 429, Code.ResourceExhausted],
    ["invalid_api_key", 401, Code.Unauthenticated],
    ["admin_unauthorized", 401, Code.Unauthenticated],
    ["engine_url_not_allowed", 403, Code.PermissionDenied],
    ["model_not_found", 404, Code.NotFound],
    ["engine_exists", 409, Code.AlreadyExists],
    ["route_not_found", 404, Code.Unimplemented],
    ["unknown_method", 404, Code.Unimplemented],
    ["config_invalid", 503, Code.Unavailable],
    ["no_healthy_engine", 503, Code.Unavailable],
    ["no_engine_available", 503, Code.Unavailable],
    ["tokenizer_unavailable", 502, Code.Unavailable],
    ["pd_decode_missing_kv_transfer_params", 502, Code.Unavailable],
    ["client_cancelled", 499, Code.Canceled],
    ["request_aborted", 499, Code.Canceled],
    ["internal_error", 500, Code.Internal],
    // Leg codes: fixed ones, and ones the engine's status decides.
    ["prefill_timeout", 504, Code.DeadlineExceeded],
    ["decode_timeout", 504, Code.DeadlineExceeded],
    ["engine_timeout", 504, Code.DeadlineExceeded],
    ["decode_request_failed", 502, Code.Unavailable],
    ["engine_event_too_large", 502, Code.ResourceExhausted],
    ["decode_event_too_large", 502, Code.ResourceExhausted],
    ["prefill_worker_failed_to_start", 503, Code.Unavailable],
    ["decode_worker_failed_to_start", 504, Code.DeadlineExceeded],
    ["engine_failed_to_start", 409, Code.Aborted],
    ["decode_stream_error", 502, Code.Unavailable],
    ["prefill_upstream_error", 400, Code.InvalidArgument],
    ["prefill_read_failed", 502, Code.Unavailable],
    ["decode_not_found", 404, Code.NotFound],
    ["engine_unavailable", 503, Code.Unavailable],
    ["decode_error", 500, Code.Internal],
  ] as const)("%s (%i) -> %s", (code, status, connect) => {
    expect(connectCodeFor(code, status)).toBe(connect);
    expect(new GatewayError(code, status, "m").connectCode).toBe(connect);
  });

  it("covers every code of the table (a code added without a row here fails)", () => {
    const rows = new Set(["invalid_request", "invalid_envelope", "unsupported_content_type", "unsupported_parameter", "context_length_exceeded", "body_too_large", "headers_too_large", "rate_limited", "abort_rate_limited", "invalid_api_key", "admin_unauthorized", "engine_url_not_allowed", "model_not_found", "engine_exists", "route_not_found", "unknown_method", "config_invalid", "no_healthy_engine", "no_engine_available", "tokenizer_unavailable", "pd_decode_missing_kv_transfer_params", "client_cancelled", "request_aborted", "internal_error"]);
    // The rest of the table are InvalidArgument (bad input) or one code per group, listed here.
    const grouped: Record<string, Code> = {
      invalid_json: Code.InvalidArgument, invalid_body: Code.InvalidArgument, invalid_override: Code.InvalidArgument,
      unsupported_content: Code.InvalidArgument, chat_template_unsupported: Code.InvalidArgument, chat_template_error: Code.InvalidArgument,
      model_required: Code.InvalidArgument, too_many_ids: Code.InvalidArgument, invalid_engine_url: Code.InvalidArgument,
      engine_model_mismatch: Code.InvalidArgument, prompt_run_too_long: Code.InvalidArgument, response_too_large: Code.ResourceExhausted, engine_not_found: Code.NotFound,
      registry_not_configured: Code.Unimplemented, engine_unreachable: Code.Unavailable,
      conversation_too_large: Code.InvalidArgument, response_not_found: Code.NotFound,
    };
    for (const [code, mapping] of Object.entries(ERROR_CODES)) {
      if (rows.has(code)) continue;
      expect(grouped[code], code).toBeDefined();
      expect(mapping, code).toBe(grouped[code]);
    }
  });

  it("a code the engine's own gRPC code came with keeps it", () => {
    expect(new GatewayError("decode_worker_failed_to_start", 429, "m", Code.ResourceExhausted).connectCode).toBe(Code.ResourceExhausted);
  });

  it("a leg prefix with an unknown suffix, or an unknown code, falls back to the status", () => {
    expect(connectMappingOf("decode_bogus")).toBeUndefined();
    expect(connectCodeFor("decode_bogus", 503)).toBe(Code.Unavailable);
    expect(connectCodeFor("teapot", 418)).toBe(Code.Internal);
  });
});

describe("docs list every code", () => {
  const docs = ["docs/api.md", "docs/admin.md"].map((f) => readFileSync(f, "utf8")).join("\n");
  it.each(Object.keys(ERROR_CODES))("%s", (code) => expect(docs).toContain(`\`${code}\``));
  it.each(Object.keys(LEG_CODE_SUFFIXES))("a leg's %s", (suffix) => {
    expect(LEG_CODE_PREFIXES.some((p) => docs.includes(`\`${p}_${suffix}\``)), suffix).toBe(true);
  });
});
