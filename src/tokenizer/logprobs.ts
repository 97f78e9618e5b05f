// Logprobs of an OpenAI answer built from VllmEngine frames: each choice's output logprobs
// (OutputLogProbs: the sampled token's, and the top alternatives), decoded with the engine's
// tokenizer and written in OpenAI's shapes, chat (`logprobs.content[]` with token, logprob,
// bytes, top_logprobs) and completions (tokens, token_logprobs, top_logprobs dicts,
// text_offset); and the prompt's (InputLogProbs) in vLLM's `prompt_logprobs` shape. A streamed
// chunk carries the logprobs of the tokens taken since the previous chunk, so the chunks'
// logprobs concatenate to the non-streamed answer's; a choice cut at a stop string keeps those
// of the tokens up to the one that completed it. As vLLM: a token is decoded on its own (a
// token carrying part of a UTF-8 character reads U+FFFD), `bytes` are the token text's UTF-8,
// -inf becomes -9999.
import type { InputLogProbs, OutputLogProbs } from "../gen/vllm_engine_pb.js";
import type { Decoder } from "./detokenizer.js";

export interface LogprobOptions {
  /** Alternatives per token (chat top_logprobs, completions logprobs). */
  top: number;
  /** vLLM's return_tokens_as_token_ids: tokens written "token_id:<id>". */
  tokensAsIds: boolean;
}

interface Alt {
  token: string;
  logprob: number;
}

interface TokenLogprob extends Alt {
  top: Alt[];
}

const utf8 = new TextEncoder();
const finite = (v: number | undefined): number => (v === undefined || Number.isNaN(v) ? -9999 : Math.max(v, -9999));

/** Code points, as Python's len() counts text_offset. */
function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

export class ChoiceLogprobs {
  private readonly entries: TokenLogprob[] = [];
  private sent = 0;
  private limit = Infinity;
  /** text_offset of the next entry to render. */
  private offset = 0;

  constructor(
    private readonly decoder: Decoder,
    private readonly o: LogprobOptions,
  ) {}

  /** The engine's logprobs for these tokens (one entry per token it has one for). */
  add(ids: readonly number[], lp: OutputLogProbs | undefined): void {
    if (!lp) return;
    const n = Math.min(ids.length, lp.tokenLogprobs.length);
    for (let i = 0; i < n; i++) {
      const top = lp.topLogprobs[i];
      this.entries.push({
        token: this.tokenText(lp.tokenIds[i] ?? ids[i]!),
        logprob: finite(lp.tokenLogprobs[i]),
        top: top ? top.tokenIds.slice(0, this.o.top).map((t, j) => ({ token: this.tokenText(t), logprob: finite(top.values[j]) })) : [],
      });
    }
  }

  /** The choice stopped after `tokens` tokens (a stop string): later logprobs are dropped. */
  cut(tokens: number): void {
    this.limit = Math.min(this.limit, tokens);
  }

  /** The entries not yet sent, marked sent (a streamed chunk's). */
  takePending(): TokenLogprob[] {
    const end = Math.min(this.entries.length, this.limit);
    const out = this.entries.slice(this.sent, end);
    this.sent = Math.max(this.sent, end);
    return out;
  }

  /** chat: `{content}`; completions: `{tokens, token_logprobs, top_logprobs, text_offset}`. */
  render(api: "chat" | "completions", entries: TokenLogprob[]): Record<string, unknown> {
    if (api === "chat") {
      const entry = (t: Alt) => ({ token: t.token, logprob: t.logprob, bytes: [...utf8.encode(t.token)] });
      return { content: entries.map((l) => ({ ...entry(l), top_logprobs: l.top.map(entry) })) };
    }
    const textOffset: number[] = [];
    for (const l of entries) {
      textOffset.push(this.offset);
      this.offset += codePoints(l.token);
    }
    return {
      tokens: entries.map((l) => l.token),
      token_logprobs: entries.map((l) => l.logprob),
      top_logprobs: entries.map((l) => Object.fromEntries(l.top.map((t) => [t.token, t.logprob]))),
      text_offset: textOffset,
    };
  }

  private tokenText(id: number): string {
    return this.o.tokensAsIds ? `token_id:${id}` : this.decoder.decode([id], { skipSpecialTokens: false });
  }
}

/** vLLM's `prompt_logprobs`: null for the first prompt token (nothing precedes it), then per
 *  token a map from token id to {logprob, rank, decoded_token}: the prompt's own token, then
 *  the `top` most likely. The proto carries no rank for the prompt's token: it is the token's
 *  place among the alternatives when it is one of them, else null. */
export function promptLogprobsOf(lp: InputLogProbs, top: number, decoder: Decoder, tokensAsIds: boolean): (Record<string, unknown> | null)[] {
  const text = (id: number) => (tokensAsIds ? `token_id:${id}` : decoder.decode([id], { skipSpecialTokens: false }));
  return lp.tokenIds.map((id, i) => {
    const own = lp.tokenLogprobs[i]?.value;
    if (own === undefined) return null;
    const alts = lp.topLogprobs[i];
    const ids = alts ? alts.tokenIds.slice(0, top) : [];
    const out: Record<string, unknown> = {};
    const rankOf = ids.indexOf(id);
    out[String(id)] = { logprob: finite(own), rank: rankOf >= 0 ? rankOf + 1 : null, decoded_token: text(id) };
    ids.forEach((t, j) => {
      if (t !== id) out[String(t)] = { logprob: finite(alts!.values[j]), rank: j + 1, decoded_token: text(t) };
    });
    return out;
  });
}
