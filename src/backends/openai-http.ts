// One POST to a vLLM OpenAI server (`vllm serve`), owned end to end: the fetch, its body
// reader, and what a client disconnect does to it. Over HTTP vLLM aborts a request when its
// connection closes, so cancelling the fetch is the Abort; a leg that holds a KV handoff may
// be kept alive until its first body chunk (ARCHITECTURE decision 5), since closing it while
// the engine still pulls the KV can leak the prefill engine's pinned blocks.
import { delay } from "../pd/engine-abort.js";
import { chargeLoad } from "../routing/load.js";
import { engineFetch } from "./fetch.js";

export interface HttpEngine {
  name: string;
  url: string;
}

/** Engine base URL + route. A base that already ends in /v1 (as OpenAI base URLs do) is not
 *  doubled; any other path prefix (a proxy mount) is kept. */
export function engineRouteUrl(base: string, route: string): string {
  let b = base.replace(/\/+$/, "");
  if (b.endsWith("/v1") && route.startsWith("/v1/")) b = b.slice(0, -3);
  return `${b}${route}`;
}

/** Headers never relayed from an engine response: hop-by-hop ones, and content-encoding /
 *  content-length, because workerd hands us the body decompressed. */
const DROPPED_RESPONSE_HEADERS = [
  "content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive",
  "proxy-connection", "upgrade", "trailer", "te",
];

export function relayResponseHeaders(upstream: Headers): Headers {
  const out = new Headers(upstream);
  for (const h of DROPPED_RESPONSE_HEADERS) out.delete(h);
  return out;
}

/** Client request headers an engine may see (trace context); the rest stay at the gateway,
 *  notably Authorization, which is the gateway's credential, not the engine's. */
const FORWARDED_REQUEST_HEADERS = ["traceparent", "tracestate", "baggage"];

export function engineRequestHeaders(client: Headers, requestId: string, stream: boolean): Headers {
  const h = new Headers({
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
    "x-request-id": requestId,
  });
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const v = client.get(name);
    if (v !== null) h.set(name, v);
  }
  return h;
}

export interface LegOptions {
  engine: HttpEngine;
  route: string;
  body: string;
  headers: Headers;
  clientSignal: AbortSignal;
  waitUntil(promise: Promise<unknown>): void;
  /** Set when the leg holds a KV handoff: after a disconnect, keep it until its first body
   *  chunk (or its end, or this many ms) before closing it. Unset: close at once. */
  deferCloseMs?: number;
}

export interface EngineLeg {
  /** The response head; rejects on a transport error (or when the leg was closed). */
  readonly head: Promise<Response>;
  /** The next body chunk. The leg sees every chunk, so it knows when the first arrived. */
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** The client went away (its signal fired or it cancelled the response stream). */
  clientGone(): void;
  /** The gateway is done with the leg: close the connection now if it is still open. */
  close(): void;
}

export function startLeg(o: LegOptions): EngineLeg {
  const controller = new AbortController();
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let sawChunk = false;
  let finished = false;
  let goneSeen = false;
  // In flight for load-aware policies from dispatch until the leg ends, however it ends.
  const releaseLoad = chargeLoad(o.engine.name);

  /** The request is over on the engine's side (answered, failed, or closed by us). */
  const finish = () => {
    finished = true;
    o.clientSignal.removeEventListener("abort", clientGone);
    releaseLoad();
  };
  const close = () => {
    if (finished) return;
    finish();
    controller.abort();
    reader?.cancel().catch(() => undefined);
  };
  const head = engineFetch(engineRouteUrl(o.engine.url, o.route), {
    method: "POST",
    headers: o.headers,
    body: o.body,
    signal: controller.signal,
  }).then((res) => {
    reader = res.body?.getReader();
    return res;
  });
  head.catch(finish);

  const read = async (): Promise<ReadableStreamReadResult<Uint8Array>> => {
    await head;
    if (!reader) {
      sawChunk = true;
      finish();
      return { done: true, value: undefined };
    }
    let r: ReadableStreamReadResult<Uint8Array>;
    try {
      r = await reader.read();
    } catch (err) {
      finish(); // the connection broke: the engine's side of the request is over
      throw err;
    }
    sawChunk = true;
    // Fully read: the engine finished the request, there is nothing left to abort.
    if (r.done) finish();
    return r;
  };

  function clientGone(): void {
    if (finished || goneSeen) return;
    goneSeen = true;
    if (o.deferCloseMs === undefined || sawChunk) return close();
    const untilFirstChunk = (async () => {
      try {
        while (!sawChunk && !finished) await read();
      } catch {
        // transport error or closed: nothing left to wait for
      }
    })();
    o.waitUntil(Promise.race([untilFirstChunk, delay(o.deferCloseMs)]).then(close));
  }

  if (o.clientSignal.aborted) clientGone();
  else o.clientSignal.addEventListener("abort", clientGone, { once: true });
  return { head, read, clientGone, close };
}

export class BodyTooLargeError extends Error {
  override name = "BodyTooLargeError";
}

/** Reads the rest of a leg's body as bytes, at most `maxBytes`. */
export async function readLegBytes(leg: EngineLeg, maxBytes: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const r = await leg.read();
    if (r.done) break;
    size += r.value.byteLength;
    if (size > maxBytes) {
      leg.close();
      throw new BodyTooLargeError(`engine response is larger than ${maxBytes} bytes`);
    }
    chunks.push(r.value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

export async function readLegText(leg: EngineLeg, maxBytes: number): Promise<string> {
  return new TextDecoder().decode(await readLegBytes(leg, maxBytes));
}
