// Turns settled pieces into OpenAI deltas: content text, reasoning text, and each call as a
// first delta (index, id, type, name) and an arguments delta. A stretch of text before,
// between or after calls that is only whitespace (the newline between two
// `</tool_call><tool_call>`, the blank lines after `</think>`) is not content; any other text
// outside calls is, as written, its whitespace included. So whitespace is held back until
// text or a call shows which it is.
import type { ParsedCall, OutputDelta } from "./types.js";

export class ContentEmitter {
  private heldSpace = "";
  private segmentHasText = false;
  private calls = 0;

  constructor(
    private readonly newCallId: () => string,
    private readonly maxCalls: number,
  ) {}

  content(delta: OutputDelta, text: string): void {
    if (this.segmentHasText) {
      delta.content += text;
      return;
    }
    if (/^\s*$/.test(text)) {
      this.heldSpace += text;
      return;
    }
    delta.content += this.heldSpace + text;
    this.heldSpace = "";
    this.segmentHasText = true;
  }

  call(delta: OutputDelta, call: ParsedCall): void {
    if (this.beginCall(delta, call.name)) this.args(delta, call.arguments);
  }

  /** The first delta of a call; false when it is past the call limit (and dropped). */
  beginCall(delta: OutputDelta, name: string): boolean {
    this.heldSpace = "";
    this.segmentHasText = false;
    if (this.calls >= this.maxCalls) return false; // parallel_tool_calls: false keeps the first
    delta.toolCalls.push({ index: this.calls++, id: this.newCallId(), type: "function", function: { name, arguments: "" } });
    return true;
  }

  /** An arguments fragment of the call begun last. */
  args(delta: OutputDelta, fragment: string): void {
    if (fragment) delta.toolCalls.push({ index: this.calls - 1, function: { arguments: fragment } });
  }
}
