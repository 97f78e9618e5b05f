// Incremental detokenization of an engine's token stream, one sequence (choice index) at a time.
// The engine sends token ids only (its servicer detokenizes just to look for stop strings), so
// the client-visible text, stop strings included, is ours to produce.
//
// Text comes from decoding a sliding window of ids, as vLLM's incremental detokenizer does with
// prefix/read offsets: decode(ids[prefix:]) minus decode(ids[prefix:read]) is the new text, and a
// window whose text ends in U+FFFD is an incomplete UTF-8 character (a byte-level token carries
// part of an emoji or CJK character), so nothing is emitted until a later token completes it.
// Invariant (before a stop cuts it): the deltas concatenate to decode(all ids).
import type { DecodeOptions } from "./tokenizer.js";

export interface Decoder {
  decode(ids: readonly number[], options?: DecodeOptions): string;
}

export interface DetokenizerOptions {
  /** Drop special tokens (EOS, <|im_start|>...) from the text. vLLM's default: true. */
  skipSpecialTokens?: boolean;
  /** Stop strings, in priority order (vLLM checks them in list order, not by position). */
  stop?: readonly string[];
  /** Keep the matched stop string at the end of the text (OpenAI/vLLM include_stop_str_in_output). */
  includeStopStrInOutput?: boolean;
  /** The last few prompt ids: context for decoders whose first token's text depends on what
   *  precedes it (SentencePiece's leading-space rule). Byte-level BPE needs none. */
  promptTailIds?: readonly number[];
}

export interface DetokenizeStep {
  /** New text for the client: may be "" while a character or a stop match is incomplete. */
  text: string;
  /** Set once, on the step where a stop string matched; later pushes return nothing. */
  matchedStop?: string;
  /** With matchedStop: how many output tokens the sequence had when the stop matched (up to
   *  and including the one that completed it, as vLLM counts a stopped sequence's tokens). */
  tokensAtStop?: number;
}

const REPLACEMENT = "\ufffd";

export class SequenceDetokenizer {
  private readonly ids: number[];
  private prefixOffset: number;
  private readOffset: number;
  /** All text decoded so far (after the prompt tail). */
  private text = "";
  /** How much of `text` the client has been given. */
  private emitted = 0;
  private stop: string | undefined;
  /** Output tokens taken (prompt tail excluded). */
  private outputTokens = 0;
  private readonly decodeOptions: DecodeOptions;
  private readonly stops: readonly string[];

  constructor(
    private readonly decoder: Decoder,
    private readonly options: DetokenizerOptions = {},
  ) {
    this.ids = [...(options.promptTailIds ?? [])];
    this.prefixOffset = 0;
    this.readOffset = this.ids.length;
    this.decodeOptions = { skipSpecialTokens: options.skipSpecialTokens ?? true };
    this.stops = (options.stop ?? []).filter((s) => s !== "");
  }

  /** The stop string that ended this sequence, if any. */
  get matchedStop(): string | undefined {
    return this.stop;
  }

  /** The client-visible text so far. */
  get output(): string {
    return this.text.slice(0, this.emitted);
  }

  /** Feeds the next token ids; returns the text that became final. */
  push(tokenIds: readonly number[]): DetokenizeStep {
    if (this.stop !== undefined) return { text: "" };
    for (const id of tokenIds) {
      this.ids.push(id);
      this.outputTokens++;
      this.appendText(this.windowDelta(false));
      if (this.checkStop()) return this.release(true);
    }
    return this.release(false);
  }

  /** End of stream: emit whatever was held back (an incomplete character decodes as U+FFFD,
   *  exactly as decode(all ids) does; a partial stop match was not a stop after all). */
  finish(): DetokenizeStep {
    if (this.stop !== undefined) return { text: "" };
    this.appendText(this.windowDelta(true));
    if (this.checkStop()) return this.release(true);
    return this.release(true);
  }

  /** New text from the window; advances the offsets only when the text is complete. */
  private windowDelta(final: boolean): string {
    if (this.readOffset === this.ids.length) return "";
    const prefixText = this.decoder.decode(this.ids.slice(this.prefixOffset, this.readOffset), this.decodeOptions);
    const newText = this.decoder.decode(this.ids.slice(this.prefixOffset), this.decodeOptions);
    if (!final && (newText.length <= prefixText.length || newText.endsWith(REPLACEMENT))) return "";
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    return newText.slice(prefixText.length);
  }

  private appendText(delta: string): void {
    this.text += delta;
  }

  /** Looks for a stop string in the text not yet released; cuts the text at a match. */
  private checkStop(): boolean {
    for (const s of this.stops) {
      // A match may start in text already released only if it was held back: search from
      // what the client has not seen (a released prefix never contains a full match).
      const from = Math.max(0, this.emitted - s.length + 1);
      const at = this.text.indexOf(s, from);
      if (at < 0) continue;
      this.stop = s;
      this.text = this.text.slice(0, this.options.includeStopStrInOutput ? at + s.length : at);
      return true;
    }
    return false;
  }

  /** Hands out text up to the safe end: all of it when final, else short of a pending
   *  partial stop match (a suffix that is a prefix of some stop string). */
  private release(final: boolean): DetokenizeStep {
    let end = this.text.length;
    if (!final && !this.options.includeStopStrInOutput) end -= this.pendingStopPrefix();
    end = Math.max(end, this.emitted);
    const text = this.text.slice(this.emitted, end);
    this.emitted = end;
    return this.stop !== undefined ? { text, matchedStop: this.stop, tokensAtStop: this.outputTokens } : { text };
  }

  /** Length of the longest suffix of the unreleased text that could begin a stop string. */
  private pendingStopPrefix(): number {
    let longest = 0;
    const tail = this.text.slice(this.emitted);
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, tail.length); k > longest; k--) {
        if (tail.endsWith(s.slice(0, k))) {
          longest = k;
          break;
        }
      }
    }
    return longest;
  }
}

/** One SequenceDetokenizer per choice index (n > 1 streams interleave their indexes). */
export class Detokenizer {
  private readonly sequences = new Map<number, SequenceDetokenizer>();

  constructor(
    private readonly decoder: Decoder,
    private readonly options: DetokenizerOptions = {},
  ) {}

  sequence(index: number): SequenceDetokenizer {
    let seq = this.sequences.get(index);
    if (!seq) {
      seq = new SequenceDetokenizer(this.decoder, this.options);
      this.sequences.set(index, seq);
    }
    return seq;
  }

  push(index: number, tokenIds: readonly number[]): DetokenizeStep {
    return this.sequence(index).push(tokenIds);
  }

  finish(index: number): DetokenizeStep {
    return this.sequence(index).finish();
  }
}
