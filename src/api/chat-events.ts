// The chat path's SSE chunks rewritten as another API's events (Responses and Messages served
// through chat): one writer per API says what each chunk, the end ([DONE]) and an in-band
// error become; this runs them over the stream, once, for both.
import { EventSplitter } from "./event-relay.js";

type Json = Record<string, unknown>;

export interface ChatEventWriter {
  /** The events before the first chunk. */
  start(): string;
  chunk(chunk: Json): string;
  /** The events after [DONE]. */
  end(): string;
  /** The events for the chat stream's in-band error object (the stream ends there). */
  error(error: Json): string;
}

/** The chat SSE body as `writer`'s events; `onEnd` runs once the stream ended with [DONE]. */
export function chatEventsOf(chatBody: ReadableStream<Uint8Array>, writer: ChatEventWriter, onEnd?: () => void): ReadableStream<Uint8Array> {
  const split = new EventSplitter();
  const encoder = new TextEncoder();
  let ended = false;
  const events = new TransformStream<Uint8Array, Uint8Array>({
    start(c) {
      c.enqueue(encoder.encode(writer.start()));
    },
    transform(bytes, c) {
      if (ended) return;
      let out = "";
      for (const ev of split.push(bytes)) {
        if (ev.data === "[DONE]") {
          ended = true;
          out += writer.end();
          onEnd?.();
          break;
        }
        const chunk = JSON.parse(ev.data) as Json;
        if (chunk.error) {
          ended = true;
          out += writer.error(chunk.error as Json);
          break;
        }
        out += writer.chunk(chunk);
      }
      if (out !== "") c.enqueue(encoder.encode(out));
    },
  });
  return chatBody.pipeThrough(events);
}
