// Turns settled pieces into OpenAI deltas: content text, reasoning text, and each call as a
// first delta (index, id, type, name) and an arguments delta. Text between or after calls
// that is only whitespace (the newline between two `</tool_call><tool_call>`) is not
// content; any other text outside calls is, as written.
import type { ParsedCall, OutputDelta } from "./types.js";

export class ContentEmitter {
  private afterCall = false;
  private heldSpace = "";
  private segmentHasText = false;
  private calls = 0;

  constructor(
    private readonly newCallId: () => string,
    private readonly maxCalls: number,
  ) {}

  content(delta: OutputDelta, text: string): void {
    if (!this.afterCall || this.segmentHasText) {
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
    this.afterCall = true;
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
