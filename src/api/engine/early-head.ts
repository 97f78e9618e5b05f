// Sends a streamed Generate's response head as soon as the PD decision is made, instead of
// when the first message is ready (connect-es waits for the first message so the handler can
// still set headers), and optionally keeps the stream alive until that message. Why: a client
// that leaves during a long prefill should stop the prefill leg, and the runtime can only tell
// once the response is under way. Measured locally (workerd, `wrangler dev`): a client's normal
// close is passed on only when the Worker writes body bytes, so the head alone is not enough;
// a keepalive message (keepalive.ts) written every `pd.stream_keepalive_ms` is. After the head,
// errors travel where streaming errors always do: the Connect end-of-stream message or the
// gRPC-web trailer frame (x-gateway-error-code in their metadata).
//
// The handler opens the latch (generate.ts, at the decision); the router races it against
// connect-es's own response. Cancelling the body we hand out counts as the client leaving.
// A Generate eligible for the raw relay (raw-eligible.ts) may instead hand its leg's raw body
// over (raw-handover.ts) before connect-es's body has anything: the body then pulls that
// relay's bytes and connect-es's body is never read.
import { createContextKey } from "@connectrpc/connect";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { universalServerResponseToFetch } from "@connectrpc/connect/protocol";
import type { RawHandover } from "./raw-handover.js";
import type { RawRelay } from "./raw-relay.js";
import { withNativeTail } from "./native-body.js";

/** Opened by the handler with its response headers once they are final. */
export class HeadLatch {
  readonly opened: Promise<Headers>;
  private resolve!: (header: Headers) => void;
  constructor() {
    this.opened = new Promise((r) => (this.resolve = r));
  }
  open(header: Headers): void {
    this.resolve(header);
  }
}

export const headLatchKey = createContextKey<HeadLatch | undefined>(undefined, { description: "early response head" });

/** A message written while the stream has nothing else to say, every `everyMs`. */
export interface Keepalive {
  frame: Uint8Array;
  everyMs: number;
}

/** connect-es's response when it comes first; otherwise a response whose head is the latch's
 *  headers and whose body relays connect-es's body when it comes, with keepalive frames
 *  before its first chunk, or, when the handler hands a leg's raw body over (`handover`),
 *  that relay's bytes instead. `onCancel` runs when the body is cancelled (the client left).
 *  A handover whose relay may end natively (`nativeTail`) gets a native body instead
 *  (native-body.ts), with this body as its early part. */
export async function respondEarly(
  responding: Promise<UniversalServerResponse>,
  latch: HeadLatch,
  onCancel: (reason: unknown) => void,
  keepalive?: Keepalive,
  handover?: RawHandover,
  waitUntil: (p: Promise<unknown>) => void = () => undefined,
): Promise<Response> {
  const first = await Promise.race([responding.then((r) => ({ r })), latch.opened.then(() => undefined)]);
  if (first) {
    handover?.close();
    return universalServerResponseToFetch(leavingSeen(first.r, onCancel));
  }
  const header = new Headers(await latch.opened);
  const source = new BodySource(responding, handover);
  let next: Promise<IteratorResult<Uint8Array>> | undefined;
  let relaying = false;
  const nextChunk = () => (next ??= source.next());
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      // The raw relay's bytes go straight in: no step of ours between it and the body.
      const raw = relaying ? source.raw : undefined;
      if (raw) {
        try {
          const bytes = await raw.next();
          if (bytes) controller.enqueue(bytes);
          else controller.close();
        } catch (err) {
          raw.cancel(); // a bug of ours, not the engine's: the leg is not left running
          controller.error(err);
        }
        return;
      }
      try {
        if (keepalive && !relaying && (await idleFor(nextChunk(), keepalive.everyMs))) {
          controller.enqueue(keepalive.frame);
          return;
        }
        const r = await nextChunk();
        next = undefined;
        relaying = true;
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      } catch (err) {
        controller.error(err);
      }
    },
    async cancel(reason) {
      onCancel(reason);
      await source.cancel();
    },
  });
  const out = handover?.nativeTail ? withNativeTail(body, () => source.raw?.tail, waitUntil) : body;
  return new Response(out, { status: 200, headers: header });
}

/** Where the body's chunks come from: connect-es's body, or a raw relay handed over before
 *  connect-es's body had anything. */
class BodySource {
  private iterator: AsyncIterator<Uint8Array> | undefined;
  /** The relay handed over, once it was. */
  raw: Pick<RawRelay, "next" | "cancel" | "tail"> | undefined;

  constructor(
    private readonly responding: Promise<UniversalServerResponse>,
    private readonly handover: RawHandover | undefined,
  ) {}

  next(): Promise<IteratorResult<Uint8Array>> {
    if (this.raw) return this.rawNext(this.raw);
    if (this.iterator) return this.iterator.next();
    const fromConnect = this.responding.then((r) => {
      // Handed over first: connect-es's body is not read, and the race already settled.
      if (this.raw) return { done: true, value: undefined } as const;
      this.handover?.close();
      return (this.iterator = bodyOf(r)[Symbol.asyncIterator]()).next();
    });
    if (!this.handover) return fromConnect;
    return Promise.race([fromConnect, this.handover.taken.then((relay) => this.rawNext((this.raw = relay)))]);
  }

  private rawNext(relay: Pick<RawRelay, "next">): Promise<IteratorResult<Uint8Array>> {
    return relay.next().then((value) => (value ? { done: false, value } : { done: true, value: undefined }));
  }

  async cancel(): Promise<void> {
    this.handover?.close();
    if (this.raw) return this.raw.cancel();
    // Closing connect-es's iterator ends the handler's generator (and its legs).
    const it = this.iterator ?? bodyOf(await this.responding.catch(() => undefined))[Symbol.asyncIterator]();
    await it.return?.().catch(() => undefined);
  }
}

/** True when `pending` has not settled within `ms` (its rejection is left to the caller). */
async function idleFor(pending: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<boolean>((r) => (timer = setTimeout(() => r(true), ms)));
  try {
    return await Promise.race([pending.then(() => false, () => false), idle]);
  } finally {
    clearTimeout(timer);
  }
}

/** `r`, whose body, once cancelled, ends the handler as the early head's body does: the client's
 *  leaving told first (`onCancel`), then the iterator returned. universalServerResponseToFetch
 *  would throw the cancel's reason into it instead, which the handler records as a failure of
 *  its own (500 internal_error) rather than the client's leaving (499). */
function leavingSeen(r: UniversalServerResponse, onCancel: (reason: unknown) => void): UniversalServerResponse {
  if (r.body === undefined) return r;
  const body = bodyOf(r);
  return {
    ...r,
    body: {
      [Symbol.asyncIterator]() {
        const it = body[Symbol.asyncIterator]();
        const left = (reason?: unknown) => {
          onCancel(reason);
          return it.return?.() ?? Promise.resolve({ done: true as const, value: undefined });
        };
        return { next: () => it.next(), return: () => left(), throw: left };
      },
    },
  };
}

function bodyOf(r: UniversalServerResponse | undefined): AsyncIterable<Uint8Array> {
  const b = r?.body;
  if (b && typeof b === "object" && Symbol.asyncIterator in b) return b as AsyncIterable<Uint8Array>;
  return (async function* () {})();
}
