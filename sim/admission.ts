// The front half every HTTP generation route shares: count and record the request, parse its
// JSON body and `x-sim-fault` header, and, when the request is refused before admission, tell
// the prefill engine whose handoff it was to pull to free it now (vLLM PR 41269; vLLM wraps
// create_chat_completion and create_responses in _with_kv_transfer_rejection_cleanup). The
// route then answers the refusal in its own error shape.
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { kvParamsOfBody } from "./body-fields.js";
import type { SimEngine } from "./engine.js";
import { parseFaultHeader } from "./faults.js";
import { BodyError, headerRecord, readBody } from "./http-util.js";
import type { SimFault } from "./types.js";

export type Admission<P> =
  | { ok: true; parsed: P; requestId: string; fault: SimFault | undefined }
  | { ok: false; error: Error };

export interface AdmitOptions<P> {
  /** The engine request id for this body (`undefined` when it is not JSON). */
  requestIdOf(json: unknown): string;
  parse(json: unknown): P;
  /** Counted in generateRequests (default true; count_tokens is not a generation). */
  generation?: boolean;
}

export async function admit<P>(engine: SimEngine, route: string, req: IncomingMessage, opts: AdmitOptions<P>): Promise<Admission<P>> {
  if (opts.generation !== false) engine.stats.add("generateRequests");
  const headers = headerRecord(req);
  let json: unknown;
  let requestId = opts.requestIdOf(undefined);
  try {
    const raw = await readBody(req);
    try {
      json = JSON.parse(raw);
    } catch {
      engine.record({ surface: "openai", method: route, protocol: "http", requestId, body: raw, receivedAt: Date.now(), headers });
      throw new BodyError("request body is not valid JSON");
    }
    requestId = opts.requestIdOf(json);
    engine.record({ surface: "openai", method: route, protocol: "http", requestId, body: json, receivedAt: Date.now(), headers });
    const parsed = opts.parse(json);
    const fault = parseFaultHeader(req.headers["x-sim-fault"] as string | undefined);
    return { ok: true, parsed, requestId, fault };
  } catch (err) {
    await engine.rejectBeforeAdmission(kvParamsOfBody(json), requestId);
    return { ok: false, error: err as Error };
  }
}

/** The x-request-id header, or a fresh id: the base of vLLM's chat and completion ids. */
export function headerRequestId(req: IncomingMessage): string {
  const h = req.headers["x-request-id"];
  return typeof h === "string" && h !== "" ? h : randomHex();
}

/** 32 hex digits, as vLLM's random_uuid(). */
export function randomHex(): string {
  return randomUUID().replace(/-/g, "");
}
