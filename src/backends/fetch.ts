// fetch for engine clients inside workerd: connect-web asks for redirect "error", which
// workerd rejects, and an engine redirect must never be followed anyway (URLs stay as
// configured), so "manual" is used and a redirect surfaces as an error status.
//
// Immediate retries when the fetch fails before any response: vLLM's HTTP server (uvicorn)
// closes idle keep-alive connections after 5 s, and a request written onto a pooled connection
// just as the engine closes it fails with "Network connection lost" although the engine is
// fine. Connections opened together go idle together, so the next pooled one may be just as
// stale: a few immediate retries, each on another connection. Only replayable bodies are
// retried and never after the caller's signal fired; a refused connection fails in
// microseconds, so a down engine still fails fast. The retries are not engine outcomes; only
// the final answer is. docs/operations.md#engine-keep-alive has the engine-side fix.
export const STALE_CONNECTION_RETRIES = 3;

export const engineFetch: typeof fetch = async (input, init) => {
  const options: RequestInit = { ...init, redirect: "manual" };
  for (let attempt = 0; ; attempt++) {
    try {
      return await fetch(input, options);
    } catch (err) {
      if (attempt >= STALE_CONNECTION_RETRIES || !canResend(input, options, err)) throw err;
    }
  }
};

/** workerd's error for a connection that closed (or refused) before any response. */
const CONNECTION_LOST = /network connection lost/i;

function canResend(input: RequestInfo | URL, init: RequestInit, err: unknown): boolean {
  // A Request's body and a stream body were consumed by the first attempt.
  if (input instanceof Request || init.body instanceof ReadableStream) return false;
  return !init.signal?.aborted && err instanceof Error && CONNECTION_LOST.test(err.message);
}
