// Fault injection: the engine-wide list (POST /sim/faults, spec.faults) and the per-request
// `x-sim-fault` header. Gateway tests use these to drive retries, breakers and error mapping.
import { Code } from "@connectrpc/connect";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import type { SimFault } from "./types.js";
import { MALFORMED_KINDS, type MalformedKind } from "./malformed.js";

export type Leg = "prefill" | "decode";

/** Connect code from its snake_case name ("unavailable", "invalid_argument"); also accepts
 *  upper case and the gRPC spelling "cancelled". undefined when unknown. */
export function parseCode(name: string): Code | undefined {
  const lower = name.trim().toLowerCase();
  if (lower === "cancelled") return Code.Canceled;
  return codeFromString(lower);
}

/** Throws Error("<path>: ...") naming the offending field; returns the fault unchanged. */
export function validateFault(value: unknown, path: string): SimFault {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`${path}: must be an object`);
  }
  const f = value as Record<string, unknown>;
  const known = ["failStart", "failMidStream", "failAfterFrames", "malformedResponse", "dropConnection", "hang", "count", "leg", "unhealthy", "slowAbortMs", "bigEvent", "endLateMs", "eosAfter"];
  for (const k of Object.keys(f)) if (!known.includes(k)) throw new Error(`${path}.${k}: unknown field`);
  const checkCode = (v: unknown, p: string) => {
    if (typeof v !== "string" || parseCode(v) === undefined) {
      throw new Error(`${p}: must be a Connect code name such as "unavailable" or "internal"`);
    }
  };
  if (f.failStart !== undefined) {
    const s = f.failStart as Record<string, unknown>;
    if (typeof s !== "object" || s === null) throw new Error(`${path}.failStart: must be an object`);
    checkCode(s.code, `${path}.failStart.code`);
    if (s.message !== undefined && typeof s.message !== "string") throw new Error(`${path}.failStart.message: must be a string`);
    if (s.httpStatus !== undefined && !(Number.isInteger(s.httpStatus) && (s.httpStatus as number) >= 400 && (s.httpStatus as number) <= 599)) {
      throw new Error(`${path}.failStart.httpStatus: must be an integer in 400..599`);
    }
  }
  if (f.failMidStream !== undefined) {
    const m = f.failMidStream as Record<string, unknown>;
    if (typeof m !== "object" || m === null) throw new Error(`${path}.failMidStream: must be an object`);
    if (!Number.isInteger(m.afterTokens) || (m.afterTokens as number) < 0) {
      throw new Error(`${path}.failMidStream.afterTokens: must be a non-negative integer`);
    }
    checkCode(m.code, `${path}.failMidStream.code`);
    if (m.message !== undefined && typeof m.message !== "string") throw new Error(`${path}.failMidStream.message: must be a string`);
    if (m.sse !== undefined && !["error-event", "reset", "no-done"].includes(m.sse as string)) {
      throw new Error(`${path}.failMidStream.sse: must be "error-event", "reset" or "no-done"`);
    }
  }
  if (f.failAfterFrames !== undefined) {
    const m = f.failAfterFrames as Record<string, unknown>;
    if (typeof m !== "object" || m === null) throw new Error(`${path}.failAfterFrames: must be an object`);
    if (!Number.isInteger(m.frames) || (m.frames as number) < 0) throw new Error(`${path}.failAfterFrames.frames: must be a non-negative integer`);
    checkCode(m.code, `${path}.failAfterFrames.code`);
  }
  if (f.malformedResponse !== undefined && !MALFORMED_KINDS.includes(f.malformedResponse as MalformedKind)) {
    throw new Error(`${path}.malformedResponse: must be one of ${MALFORMED_KINDS.map((k) => `"${k}"`).join(", ")}`);
  }
  if (f.hang !== undefined && typeof f.hang !== "boolean") throw new Error(`${path}.hang: must be a boolean`);
  if (f.endLateMs !== undefined && !(Number.isInteger(f.endLateMs) && (f.endLateMs as number) >= 1 && (f.endLateMs as number) <= 60_000)) {
    throw new Error(`${path}.endLateMs: must be an integer in 1..60000`);
  }
  if (f.bigEvent !== undefined) {
    const b = f.bigEvent as Record<string, unknown>;
    if (typeof b !== "object" || b === null) throw new Error(`${path}.bigEvent: must be an object`);
    if (!(Number.isInteger(b.bytes) && (b.bytes as number) >= 1 && (b.bytes as number) <= 256 * 1024 * 1024)) throw new Error(`${path}.bigEvent.bytes: must be an integer in 1..268435456`);
    if (b.unterminated !== undefined && typeof b.unterminated !== "boolean") throw new Error(`${path}.bigEvent.unterminated: must be a boolean`);
  }
  if (f.dropConnection !== undefined && typeof f.dropConnection !== "boolean") throw new Error(`${path}.dropConnection: must be a boolean`);
  if (f.unhealthy !== undefined && typeof f.unhealthy !== "boolean") throw new Error(`${path}.unhealthy: must be a boolean`);
  if (f.slowAbortMs !== undefined && !(Number.isInteger(f.slowAbortMs) && (f.slowAbortMs as number) >= 0)) throw new Error(`${path}.slowAbortMs: must be a non-negative integer`);
  if (f.eosAfter !== undefined && !(Number.isInteger(f.eosAfter) && (f.eosAfter as number) >= 1)) throw new Error(`${path}.eosAfter: must be a positive integer`);
  if (f.count !== undefined && !(Number.isInteger(f.count) && (f.count as number) >= 1)) {
    throw new Error(`${path}.count: must be a positive integer`);
  }
  if (f.leg !== undefined && f.leg !== "prefill" && f.leg !== "decode") throw new Error(`${path}.leg: must be "prefill" or "decode"`);
  return f as SimFault;
}

/** A list or a single fault, as POST /sim/faults accepts. */
export function validateFaultList(value: unknown, path: string): SimFault[] {
  const list = Array.isArray(value) ? value : [value];
  return list.map((f, i) => validateFault(f, Array.isArray(value) ? `${path}[${i}]` : path));
}

function affectsRequests(f: SimFault): boolean {
  return f.failStart !== undefined || f.failMidStream !== undefined || f.failAfterFrames !== undefined || f.hang === true || f.eosAfter !== undefined;
}

/** The engine's fault list. `count` is consumed as faults are applied. */
export class FaultBook {
  private faults: SimFault[] = [];

  constructor(initial: SimFault[] = []) {
    this.replace(initial);
  }

  replace(faults: SimFault[]): void {
    // Copies, so consuming `count` never mutates the caller's spec.
    this.faults = faults.map((f) => ({ ...f }));
  }

  list(): SimFault[] {
    return this.faults.map((f) => ({ ...f }));
  }

  /** The largest slowAbortMs of the active faults (0: none). */
  get slowAbortMs(): number {
    return Math.max(0, ...this.faults.map((f) => f.slowAbortMs ?? 0));
  }

  get unhealthy(): boolean {
    return this.faults.some((f) => f.unhealthy === true);
  }

  /** The next malformedResponse fault (any leg: it is applied before the body is read). */
  takeMalformed(): MalformedKind | undefined {
    return this.consume((f) => f.malformedResponse !== undefined)?.malformedResponse;
  }

  /** The next bigEvent fault for a streamed OpenAI request on `leg` (the request's own
   *  header fault wins). */
  takeBigEvent(leg: Leg, perRequest: SimFault | undefined): SimFault["bigEvent"] {
    if (perRequest?.bigEvent) return perRequest.bigEvent;
    return this.consume((f) => f.bigEvent !== undefined && (f.leg === undefined || f.leg === leg))?.bigEvent;
  }

  /** The next endLateMs fault for a streamed OpenAI request on `leg` (the request's own
   *  header fault wins). */
  takeEndLate(leg: Leg, perRequest: SimFault | undefined): number | undefined {
    if (perRequest?.endLateMs) return perRequest.endLateMs;
    return this.consume((f) => f.endLateMs !== undefined && (f.leg === undefined || f.leg === leg))?.endLateMs;
  }

  /** Whether the next dropConnection fault applies (any leg: applied before the body is read). */
  takeDropConnection(): boolean {
    return this.consume((f) => f.dropConnection === true) !== undefined;
  }

  /** The fault to apply to a new request on `leg`: the request's own header fault wins. */
  take(leg: Leg, perRequest: SimFault | undefined): SimFault | undefined {
    const matches = (f: SimFault) => affectsRequests(f) && (f.leg === undefined || f.leg === leg);
    if (perRequest && matches(perRequest)) return perRequest;
    return this.consume(matches);
  }

  /** The first engine fault that matches, one use of its `count` spent (removed at 0). */
  private consume(matches: (f: SimFault) => boolean): SimFault | undefined {
    const i = this.faults.findIndex(matches);
    if (i < 0) return undefined;
    const f = this.faults[i]!;
    if (f.count !== undefined && --f.count <= 0) this.faults.splice(i, 1);
    return f;
  }
}

/** Parses the `x-sim-fault` header; a malformed header is a client error, reported as such. */
export function parseFaultHeader(value: string | null | undefined): SimFault | undefined {
  if (value === null || value === undefined || value === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new Error("x-sim-fault: not valid JSON");
  }
  return validateFault(parsed, "x-sim-fault");
}
