// One engine's Generate stream as the gateway relays it: dispatch, first frame, load charge,
// and the abort rules on client disconnect (ARCHITECTURE decision 5).
import { Code, ConnectError } from "@connectrpc/connect";
import type { GenerateRequest, GenerateResponse } from "../gen/vllm_engine_pb.js";
import type { VllmEngineClient } from "../backends/vllm-engine.js";
import type { EventSink, Leg } from "../metrics/events.js";
import { chargeLoad } from "../routing/load.js";
import { GatewayError, clientCancelledError, legError } from "./errors.js";
import { delay, sendAbort } from "./engine-abort.js";

export interface EngineStreamInput {
  engine: { name: string; client: VllmEngineClient };
  request: GenerateRequest;
  leg: Leg;
  model: string;
  events: EventSink;
  clientSignal: AbortSignal;
  waitUntil(promise: Promise<unknown>): void;
  /** The engine holds a KV handoff: defer an Abort before its first frame (up to the cap). */
  handedOff: boolean;
  deferredAbortMaxMs: number;
  /** The first frame must arrive within this (ms); then the leg is aborted with a 504. */
  firstFrameTimeoutMs: number;
  /** Error codes and message prefix for a failure before the first frame. */
  startError: { code: string; prefix: string; timeoutCode: string };
}

/** Dispatches a Generate leg and waits for its first frame (which proves any KV handoff
 *  completed). Abort rules: with a handoff, a disconnect before that frame defers the Abort
 *  until the frame, the stream's end or the cap; otherwise, and after the first frame, it is
 *  immediate. Normal completion sends none. */
export async function openEngineStream(input: EngineStreamInput): Promise<AsyncIterable<GenerateResponse>> {
  const { engine: decode, events, model, request: d, handedOff, leg } = input;
  const controller = new AbortController();
  const releaseLoad = chargeLoad(decode.name);
  const iterator = decode.client.generate(d, { signal: controller.signal })[Symbol.asyncIterator]();
  let state: "waiting" | "streaming" | "done" = "waiting";
  const abortNow = () => {
    controller.abort();
    input.waitUntil(sendAbort(decode.client, d.requestId, decode.name));
  };
  const first = iterator.next();
  const onClientAbort = () => {
    if (state === "done") return;
    if (state === "waiting" && handedOff) {
      const settled = first.then(() => undefined, () => undefined);
      input.waitUntil(Promise.race([settled, delay(input.deferredAbortMaxMs)]).then(abortNow));
    } else {
      abortNow();
    }
  };
  // A disconnect in the window after prefill finished: decode is still dispatched with the
  // handoff, so the abort below lets the decode engine reject the transfer and free the blocks.
  if (input.clientSignal.aborted) onClientAbort();
  else input.clientSignal.addEventListener("abort", onClientAbort, { once: true });
  const finish = () => {
    state = "done";
    releaseLoad();
    input.clientSignal.removeEventListener("abort", onClientAbort);
  };

  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abortNow();
  }, input.firstFrameTimeoutMs);
  let head: IteratorResult<GenerateResponse>;
  try {
    head = await first;
  } catch (err) {
    finish();
    if (input.clientSignal.aborted) throw clientCancelledError();
    const e = timedOut
      ? new GatewayError(input.startError.timeoutCode, 504, `${input.startError.prefix}: no first frame within ${input.firstFrameTimeoutMs} ms`, Code.DeadlineExceeded)
      : legError(err, input.startError.code, input.startError.prefix);
    events.emit({ type: "engine_outcome", model, engine: decode.name, leg, status: e.status });
    throw e;
  } finally {
    clearTimeout(timer);
  }
  if (input.clientSignal.aborted) {
    finish();
    throw clientCancelledError();
  }
  state = "streaming";
  events.emit({ type: "engine_outcome", model, engine: decode.name, leg, status: 200 });

  return {
    async *[Symbol.asyncIterator]() {
      let completed = false;
      try {
        if (head.done) {
          completed = true;
          return;
        }
        yield head.value;
        for (;;) {
          const next = await iterator.next();
          if (next.done) break;
          yield next.value;
        }
        completed = true;
      } catch (err) {
        completed = true; // the engine ended the stream itself, or we aborted it below
        if (input.clientSignal.aborted) throw clientCancelledError();
        throw err instanceof ConnectError ? err : ConnectError.from(err);
      } finally {
        const wasDone = state === "done";
        finish();
        // Consumer stopped early (client went away mid-stream): abort decode now.
        if (!completed && !wasDone && !input.clientSignal.aborted) abortNow();
      }
    },
  };
}

