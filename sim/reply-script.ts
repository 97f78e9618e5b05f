// The reply a prompt's run emits when it is fixed in advance, on every HTTP API: a
// structured-output constraint's value (after an empty thought under a reasoning parser, whose
// grammar starts after `</think>`), or the prompt's <sim-say> script (sim/script.ts).
import { constrainedText } from "./constraint.js";
import type { ReplyFields } from "./openai-fields.js";
import { scriptOf, scriptText, type Script } from "./script.js";
import type { EngineConfig } from "./spec.js";
import { detokenize, promptHash } from "./tokens.js";

export interface ReplyScript {
  script?: Script;
  /** Where the run stops by itself (EOS); unset: the hash's natural length. */
  replyLength?: number;
}

/** `endsAfterScript`: a <sim-say> reply ends (EOS) after its text instead of cycling, as the
 *  Responses and Messages APIs need (they have no ignore_eos). */
export function replyScript(cfg: EngineConfig, fields: ReplyFields, promptIds: number[], promptText: string, endsAfterScript = false): ReplyScript {
  const c = fields.constraint;
  const constrained = c ? constrainedText(c, promptHash(promptIds)) : undefined;
  if (constrained !== undefined && constrained !== "") {
    const script = scriptOf((cfg.reasoningParser ? "</think>" : "") + constrained);
    return { script, replyLength: script.ids.length };
  }
  const say = scriptText(promptText);
  if (say === undefined) return {};
  const script = scriptOf(say);
  return endsAfterScript ? { script, replyLength: script.ids.length } : { script };
}

/** Each output token's text: the script's (cycled), else the word the id stands for. */
export function outputTexts(ids: number[], script: Script | undefined): string[] {
  return ids.map((id, pos) => (script ? script.texts[pos % script.texts.length]! : detokenize([id])));
}

/** Output tokens the qwen3 reasoning parser counts as reasoning (count_reasoning_tokens): those
 *  before `</think>`, the markers not counted; with no `</think>`, every token when thinking
 *  is on (a truncated thought) and none when it is off. */
export function reasoningTokenCount(cfg: EngineConfig, texts: string[], thinking: boolean): number {
  if (!cfg.reasoningParser) return 0;
  const end = texts.indexOf("</think>");
  if (end < 0 && !thinking) return 0;
  return (end < 0 ? texts : texts.slice(0, end)).filter((t) => t !== "<think>").length;
}
