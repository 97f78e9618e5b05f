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
//
// An engine entry may name a binding (a Workers VPC service in front of a private cluster):
// every request to that engine, over every transport, then goes through env[binding].fetch
// with the engine's own URL, so its Host header still selects the engine behind the tunnel.
export const STALE_CONNECTION_RETRIES = 3;

type Fetch = typeof fetch;

/** engineFetch over another fetch (a binding's). */
export function engineFetchVia(base: Fetch): Fetch {
  return (input, init) => {
    // Callers on the hot path already ask for "manual": no copy of their options then.
    const options: RequestInit = init?.redirect === "manual" ? init : { ...init, redirect: "manual" };
    const attempt = (n: number): Promise<Response> => {
      let sent: Promise<Response>;
      try {
        sent = base(input, options);
      } catch (err) {
        sent = Promise.reject(err); // a fetch that throws is a failed fetch, never a throw out of the caller
      }
      return sent.catch((err: unknown) => {
        if (n >= STALE_CONNECTION_RETRIES || !canResend(input, options, err)) throw err;
        return attempt(n + 1);
      });
    };
    return attempt(0);
  };
}

export const engineFetch: Fetch = engineFetchVia((input, init) => fetch(input, init));

/** workerd's error for a connection that closed (or refused) before any response. */
const CONNECTION_LOST = /network connection lost/i;

function canResend(input: RequestInfo | URL, init: RequestInit, err: unknown): boolean {
  // A Request's body and a stream body were consumed by the first attempt.
  if (input instanceof Request || init.body instanceof ReadableStream) return false;
  return !init.signal?.aborted && err instanceof Error && CONNECTION_LOST.test(err.message);
}

/** The Worker's bindings (its `env`), as a request or the registry object received them. */
export type Bindings = Readonly<Record<string, unknown>>;

/** Whether `bindings` has one of this name that can fetch. */
export function hasFetchBinding(bindings: Bindings, name: string): boolean {
  const b = bindings[name] as { fetch?: unknown } | undefined;
  return typeof b?.fetch === "function";
}

/** The fetch for one engine: its binding's when it names one, else the Worker's own. The
 *  binding is looked up at each call, so the table may be replaced after this was made. */
export function engineFetchFor(engine: { name?: string; binding?: string }, bindings: () => Bindings): Fetch {
  const name = engine.binding;
  if (name === undefined) return engineFetch;
  return engineFetchVia((input, init) => {
    const b = bindings()[name] as { fetch?: Fetch } | undefined;
    if (typeof b?.fetch !== "function") {
      return Promise.reject(new TypeError(`engine${engine.name ? ` '${engine.name}'` : ""} names the binding ${name}, which this Worker does not have (wrangler.toml vpc_services)`));
    }
    return b.fetch(input, init);
  });
}
