// vLLM's truncate_prompt_tokens on the path where the gateway tokenizes: the prompt's ids are
// cut here, before the context-window check, so a long prompt the client asked to truncate
// fits instead of being refused, and both PD legs get the same, already short, ids. As vLLM's
// tokenize params: k keeps k tokens, -1 keeps what the context leaves after the output cap
// (max_tokens, or one token when it is absent), a k larger than that is refused, and the
// left end is dropped unless truncation_side is "right". Pure.
import { GatewayError } from "../../core/errors.js";
import { maxTokensField } from "../context-window.js";

export interface Truncation {
  /** How many ids to keep. */
  keep: number;
  side: "left" | "right";
}

const invalid = (param: string, message: string) => new GatewayError("invalid_request", 400, `${param}: ${message}`, undefined, param);

/** The truncation the body asks for, or undefined for none. */
export function truncationOf(chat: boolean, body: Record<string, unknown>, maxContextLength: number | undefined): Truncation | undefined {
  const t = body.truncate_prompt_tokens;
  if (t === undefined || t === null) return undefined;
  if (!Number.isSafeInteger(t) || (t as number) < -1 || t === 0) throw invalid("truncate_prompt_tokens", "must be -1 or a positive integer");
  const sideField = body.truncation_side;
  if (sideField !== undefined && sideField !== null && sideField !== "left" && sideField !== "right") throw invalid("truncation_side", 'must be "left" or "right"');
  const side = sideField === "right" ? "right" : "left";
  if (maxContextLength === undefined) {
    if (t === -1) throw invalid("truncate_prompt_tokens", "-1 needs the model's context length, which no engine reported");
    return { keep: t as number, side };
  }
  const budget = maxContextLength - (maxTokensField(chat, body).value ?? 1);
  if (t === -1) return { keep: Math.max(budget, 1), side };
  if ((t as number) > budget) throw invalid("truncate_prompt_tokens", `${t as number} exceeds what the context window (${maxContextLength}) leaves after the output (${budget})`);
  return { keep: t as number, side };
}

export function truncateIds(ids: number[], t: Truncation | undefined): number[] {
  if (!t || ids.length <= t.keep) return ids;
  return t.side === "left" ? ids.slice(ids.length - t.keep) : ids.slice(0, t.keep);
}
