// Field checks shared by the sim's HTTP request parsers. A wrong type is a 400 naming the
// field, as vLLM's pydantic request models answer (the message format is the sim's own).
import type { KvParams } from "./kv-params.js";

export type Body = Record<string, unknown>;

/** A request vLLM refuses: `status` and, for the OpenAI error body, the `param` it names. */
export class OpenAiBadRequest extends Error {
  constructor(
    message: string,
    readonly param: string | null,
    readonly status = 400,
    /** vLLM's error type when it is not the status's usual one ("invalid_request_error"). */
    readonly type?: string,
  ) {
    super(message);
  }
}

export function bad(field: string, message: string): never {
  throw new OpenAiBadRequest(`${field}: ${message}`, field);
}

export function isObject(v: unknown): v is Body {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The body as an object, or a 400. */
export function bodyObject(value: unknown): Body {
  if (!isObject(value)) throw new OpenAiBadRequest("request body must be a JSON object", null);
  return value;
}

const absent = (v: unknown) => v === undefined || v === null;

export function optInt(body: Body, field: string, min: number): number | undefined {
  const v = body[field];
  if (absent(v)) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v)) bad(field, "must be an integer");
  if (v < min) bad(field, `must be at least ${min}`);
  return v;
}

export function optBool(body: Body, field: string): boolean | undefined {
  const v = body[field];
  if (absent(v)) return undefined;
  if (typeof v !== "boolean") bad(field, "must be a boolean");
  return v;
}

export function optNumber(body: Body, field: string): number | undefined {
  const v = body[field];
  if (absent(v)) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) bad(field, "must be a number");
  return v;
}

export function optString(body: Body, field: string): string | undefined {
  const v = body[field];
  if (absent(v)) return undefined;
  if (typeof v !== "string") bad(field, "must be a string");
  return v;
}

export function optObject(body: Body, field: string): Body | undefined {
  const v = body[field];
  if (absent(v)) return undefined;
  if (!isObject(v)) bad(field, "must be an object");
  return v;
}

/** `stop`-style field: a string or an array of strings. */
export function optStopList(body: Body, field: string): string[] {
  const v = body[field];
  if (absent(v)) return [];
  if (typeof v === "string") return [v];
  if (Array.isArray(v) && v.every((s) => typeof s === "string")) return v as string[];
  bad(field, "must be a string or an array of strings");
}

/** Top-level kv_transfer_params: an object, passed to the connector as is. */
export function optKvParams(body: Body): KvParams | undefined {
  return optObject(body, "kv_transfer_params");
}

/** The body's top-level kv_transfer_params when it is an object, whatever else is wrong: what
 *  a refused request's pre-admission release notice is built from. */
export function kvParamsOfBody(json: unknown): KvParams | undefined {
  return isObject(json) && isObject(json.kv_transfer_params) ? json.kv_transfer_params : undefined;
}
