// The OpenAI HTTP leg transport (`vllm serve`): encodes a LegSpec onto the client's JSON
// body, POSTs it, and yields the response body's chunks. There is no Abort RPC: over HTTP
// vLLM aborts a request when its connection closes, so closing the call is the abort.
import { readBounded, concatBytes } from "../core/body.js";
import { errorText } from "../core/errors.js";
import { LegFailure, type EngineCall, type Harvester, type LegTransport } from "../core/leg-transport.js";
import { bodyWithSampling, buildEngineBody, harvestKvParams, type EngineHttpRoute } from "./openai-bodies.js";
import type { EngineConnections } from "./engine-clients.js";
import { engineRequestHeaders, engineRouteUrl, passedThroughStatus, upstreamErrorMessage } from "./openai-http.js";

/** An OpenAI request as the HTTP transport forwards it. */
export interface OpenAiHttpPayload {
  route: EngineHttpRoute;
  /** The client's JSON text (forwarded to decode byte for byte, plus the KV params). */
  text: string;
  /** JSON.parse of text (not a validator's output: unknown fields must survive). */
  body: Record<string, unknown>;
  stream: boolean;
  /** The client's headers; only trace context is passed on. */
  clientHeaders: Headers;
}

/** A prefill response is one capped sample; this bounds a misbehaving engine's body (prompt
 *  logprobs of a long prompt stay far below it). */
export const MAX_PREFILL_RESPONSE_BYTES = 16 * 1024 * 1024;
/** Bound on an engine's error body, which is only read for its message. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };
const EMPTY = new Uint8Array(0);

/** Both legs get the full body, and there is no typed bootstrap form (decision 1). */
export const OPENAI_HTTP_TRAITS = { typedBootstrap: false, pixelsOnPrefillOnly: false } as const;

/** The transport, reaching each engine through `engines` (the isolate's bindings). */
export function openAiHttpTransport(engines: Pick<EngineConnections, "fetchFor">): LegTransport<OpenAiHttpPayload, Uint8Array> {
  return {
    traits: OPENAI_HTTP_TRAITS,
    start(engine, p, spec): EngineCall<Uint8Array> {
      const controller = new AbortController();
      const body = spec.sampling ? JSON.stringify(bodyWithSampling(p.route, p.body, spec.sampling, spec.kvParamsJson)) : buildEngineBody(p.text, spec.kvParamsJson, p.body);
      const head = engines.fetchFor(engine)(engineRouteUrl(engine.url, p.route), {
        method: "POST",
        headers: engineRequestHeaders(p.clientHeaders, spec.requestId, spec.leg !== "prefill" && p.stream),
        body,
        signal: controller.signal,
        redirect: "manual",
      });
      head.catch(() => undefined); // observed by next(); never an unhandled rejection
      let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
      let resBody: ReadableStream<Uint8Array> | undefined;
      let headers: Headers | undefined;
      let ended = false;
      let closed = false;
      let opened = false;
      const open = async (): Promise<void> => {
        let res: Response;
        try {
          res = await head;
        } catch (err) {
          throw new LegFailure("transport", 502, errorText(err));
        }
        headers = res.headers;
        if (!res.ok) throw await statusFailure(res);
        resBody = res.body ?? undefined;
        opened = true;
      };
      const readBody = (): Promise<IteratorResult<Uint8Array>> => {
        if (!resBody) {
          ended = true;
          return Promise.resolve(DONE);
        }
        reader = resBody.getReader();
        return read(reader);
      };
      const readFailed = (err: unknown): never => {
        throw new LegFailure("read", 502, errorText(err));
      };
      const onRead = (r: ReadableStreamReadResult<Uint8Array>): IteratorResult<Uint8Array> => {
        if (!r.done) return r;
        ended = true;
        return DONE;
      };
      // Not async: one promise per chunk (the reader's), not three.
      const read = (rd: ReadableStreamDefaultReader<Uint8Array>) => rd.read().then(onRead, readFailed);
      // A non-streamed answer's first frame is its head (vLLM sends it with the finished
      // answer): an empty chunk, so the body can be handed over untouched (detach).
      let headFrame = spec.leg !== "prefill" && !p.stream;
      return {
        next() {
          // Closed by the gateway is not an end the engine sent: never a clean "done".
          if (closed) return Promise.reject(new LegFailure("transport", 502, "the call was closed"));
          if (ended) return Promise.resolve(DONE);
          if (headFrame) {
            headFrame = false;
            return open().then(() => ({ done: false, value: EMPTY }));
          }
          if (reader) return read(reader);
          if (opened) return readBody();
          return open().then(readBody);
        },
        close() {
          if (ended || closed) return;
          closed = true;
          // Aborting the fetch errors the body at its source (workerd wraps it in an
          // AbortableInputStream), so a pipe from a detached body ends after the bytes it holds,
          // never inside a write (a pipe stopped by its own signal mid-write leaves the client's
          // body broken, docs/configuration.md "SSE relays"). A detached body being piped is
          // cancelled by its pipe too (the leg's signal); that cancel is what closes the
          // engine's connection at once.
          controller.abort();
          if (!reader && resBody?.locked) return;
          (reader ?? resBody)?.cancel().catch(() => undefined);
        },
        headers: () => headers,
        detach() {
          if (!opened || ended || closed || !resBody) return undefined;
          reader?.releaseLock();
          reader = undefined;
          return resBody;
        },
      };
    },
    harvester(): Harvester<Uint8Array> {
      const chunks: Uint8Array[] = [];
      let size = 0;
      return {
        push(chunk) {
          size += chunk.byteLength;
          if (size > MAX_PREFILL_RESPONSE_BYTES) throw new LegFailure("read", 502, `response is larger than ${MAX_PREFILL_RESPONSE_BYTES} bytes`);
          chunks.push(chunk);
        },
        result() {
          const text = new TextDecoder().decode(concatBytes(chunks, size));
          return harvestKvParams(text);
        },
      };
    },
  };
}

/** An engine's error status, with the message from its (bounded) error body. */
async function statusFailure(res: Response): Promise<LegFailure> {
  const status = passedThroughStatus(res.status);
  try {
    const text = res.body ? new TextDecoder().decode(await readBounded(res.body, MAX_ERROR_BODY_BYTES)) : "";
    return new LegFailure("status", status, upstreamErrorMessage(text));
  } catch (err) {
    return new LegFailure("read", status, `error body could not be read: ${errorText(err)}`);
  }
}
