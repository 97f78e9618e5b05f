// Data-plane API keys: `Authorization: Bearer <key>` checked against the API_KEYS secret in
// constant time (both sides hashed to SHA-256, then compared without early exit). Open only
// when the config says `auth.data_plane: "open"`; with "api_keys" and no keys configured,
// every data-plane request is refused rather than silently served.
import type { MiddlewareHandler } from "hono";
import type { GatewayContext } from "../context.js";
import type { Env } from "../env.js";
import { reject } from "../errors/render.js";

const encoder = new TextEncoder();
// This cache and checkedKeys below stay module-level, not isolate state: both memoize pure
// functions of the API_KEYS secret (digests; a key's owner tag), so an app cannot see another
// app's answer as different from its own, and both are bounded (one entry; 1024 valid keys).
let cachedKeys: { source: string; digests: Promise<Uint8Array[]> } | undefined;

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

function keyDigests(source: string): Promise<Uint8Array[]> {
  if (cachedKeys?.source !== source) {
    const keys = source.split(",").map((k) => k.trim()).filter(Boolean);
    cachedKeys = { source, digests: Promise.all(keys.map(sha256)) };
  }
  return cachedKeys.digests;
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Constant-time equality of two equal-length digests. */
export function digestsEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** Keys already checked in this isolate, with their tags: every request of a key would
 *  otherwise hash it twice. Only valid keys are kept (random ones cannot fill it), bounded. */
const checkedKeys = new Map<string, { source: string; owner: string }>();
const MAX_CHECKED_KEYS = 1024;

/** The key's owner tag when it is one of `apiKeys`, else undefined. */
export async function ownerOfKey(presented: string, apiKeys: string): Promise<string | undefined> {
  const known = checkedKeys.get(presented);
  if (known?.source === apiKeys) return known.owner;
  if (!(await isValidKey(presented, apiKeys))) return undefined;
  const owner = hex(await sha256(presented)).slice(0, 12);
  if (checkedKeys.size >= MAX_CHECKED_KEYS) checkedKeys.clear();
  checkedKeys.set(presented, { source: apiKeys, owner });
  return owner;
}

export async function isValidKey(presented: string, apiKeys: string): Promise<boolean> {
  const digest = await sha256(presented);
  let ok = false;
  // Compare against every key so the time does not depend on which one matched.
  for (const k of await keyDigests(apiKeys)) ok = digestsEqual(digest, k) || ok;
  return ok;
}

export function bearerToken(header: string | null | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return m?.[1];
}

/** The API key a client presents: `Authorization: Bearer <key>` (OpenAI SDKs), else
 *  `x-api-key: <key>` (Anthropic SDKs). */
export function presentedKey(headers: Headers): string | undefined {
  const bearer = bearerToken(headers.get("authorization"));
  if (bearer !== undefined) return bearer;
  const key = headers.get("x-api-key")?.trim();
  return key ? key : undefined;
}

export function dataPlaneAuth(): MiddlewareHandler<{ Bindings: Env; Variables: { gateway: GatewayContext; apiKey?: string } }> {
  return async (c, next) => {
    if (c.get("gateway").config.auth.data_plane === "open") return next();
    const token = presentedKey(c.req.raw.headers);
    const keys = c.env.API_KEYS ?? "";
    const owner = token === undefined || keys.trim() === "" ? undefined : await ownerOfKey(token, keys);
    if (token === undefined || owner === undefined) {
      const message = token === undefined ? "Authorization: a Bearer API key (or x-api-key) is required" : "Authorization: the API key is not valid";
      return reject(c.req.raw, 401, "invalid_api_key", message, { "www-authenticate": 'Bearer realm="vllm-edge-gateway"' });
    }
    c.set("apiKey", token);
    // The credential's tag scopes engine-side request ids and Abort (routing/client-requests.ts).
    c.get("gateway").owner = owner;
    return next();
  };
}
