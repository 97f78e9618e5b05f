// A request body's JSON text as an object with a named model, for the HTTP surfaces that check
// their own fields (Responses, Anthropic Messages): not JSON, not an object, past the JSON
// limits (json-limits.ts) or without a model is a 400 naming the field. Pure.
import { GatewayError } from "../core/errors.js";
import { jsonLimitIssue } from "./json-limits.js";

export const invalidField = (param: string, message: string, code = "invalid_request") => new GatewayError(code, 400, `${param}: ${message}`, undefined, param);

export function modelBody(text: string): Record<string, unknown> & { model: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new GatewayError("invalid_json", 400, `request body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new GatewayError("invalid_request", 400, "request body must be a JSON object");
  const body = json as Record<string, unknown>;
  const limit = jsonLimitIssue(text, body);
  if (limit) throw invalidField(limit.param || "(body)", limit.message);
  if (typeof body.model !== "string" || body.model === "") throw invalidField("model", "must be a non-empty string");
  return body as Record<string, unknown> & { model: string };
}
