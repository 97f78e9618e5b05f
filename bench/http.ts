// A lean HTTP/1.1 client on node:http with keep-alive agents (less client-side noise than
// fetch), timing each exchange: response headers, first body byte, every SSE event, end.
import * as http from "node:http";

export interface Target {
  name: string;
  /** http://127.0.0.1:PORT, no trailing slash. */
  base: string;
  /** Headers this target needs on every request (e.g. Portkey's provider headers). */
  headers?: Record<string, string>;
}

export interface Exchange {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Milliseconds from the start of the request. */
  headersMs: number;
  firstByteMs: number;
  totalMs: number;
  bytes: number;
  body?: string;
  /** Arrival time (ms from start) of each SSE `data:` line other than `[DONE]`. */
  events?: number[];
}

export interface PostOptions {
  agent?: http.Agent;
  headers?: Record<string, string>;
  /** Keep the body text (for checks). */
  keepBody?: boolean;
  /** Parse the body as server-sent events and time each one. */
  sse?: boolean;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Called once, when the first SSE event of a 200 response arrived. */
  onFirstEvent?: () => void;
}

const agents = new Map<string, http.Agent>();

/** A keep-alive agent per name, with up to `sockets` connections. */
export function agentFor(name: string, sockets: number): http.Agent {
  const key = `${name}#${sockets}`;
  let a = agents.get(key);
  if (!a) {
    a = new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
    agents.set(key, a);
  }
  return a;
}

export function destroyAgents(): void {
  for (const a of agents.values()) a.destroy();
  agents.clear();
}

export function post(url: string, body: string | Uint8Array, opts: PostOptions = {}): Promise<Exchange> {
  const t0 = performance.now();
  return new Promise<Exchange>((resolve, reject) => {
    const payload = typeof body === "string" ? Buffer.from(body) : body;
    const req = http.request(url, {
      method: "POST",
      agent: opts.agent ?? agentFor("default", 64),
      headers: { "content-type": "application/json", "content-length": String(payload.byteLength), ...opts.headers },
      signal: opts.signal,
      timeout: opts.timeoutMs ?? 60_000,
    });
    req.on("timeout", () => req.destroy(new Error(`timeout after ${opts.timeoutMs ?? 60_000} ms: ${url}`)));
    req.on("error", reject);
    req.on("response", (res) => {
      const headersMs = performance.now() - t0;
      let firstByteMs = -1;
      let bytes = 0;
      const chunks: Buffer[] = [];
      const events: number[] = [];
      let pending = "";
      res.on("data", (chunk: Buffer) => {
        const now = performance.now() - t0;
        if (firstByteMs < 0) firstByteMs = now;
        bytes += chunk.byteLength;
        if (opts.keepBody) chunks.push(chunk);
        if (opts.sse) {
          pending += chunk.toString("utf8");
          let cut: number;
          while ((cut = pending.indexOf("\n\n")) >= 0) {
            const event = pending.slice(0, cut);
            pending = pending.slice(cut + 2);
            // One token event per `data:` line (a relay may pack several into one event block).
            for (const line of event.split("\n")) {
              if (!line.startsWith("data:") || line.includes("[DONE]")) continue;
              if (events.length === 0 && res.statusCode === 200) opts.onFirstEvent?.();
              events.push(now);
            }
          }
        }
      });
      res.on("error", reject);
      res.on("end", () => {
        const totalMs = performance.now() - t0;
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          headersMs,
          firstByteMs: firstByteMs < 0 ? totalMs : firstByteMs,
          totalMs,
          bytes,
          ...(opts.keepBody ? { body: Buffer.concat(chunks).toString("utf8") } : {}),
          ...(opts.sse ? { events } : {}),
        });
      });
    });
    req.end(payload);
  });
}

export async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

export async function postJson(url: string, body: unknown): Promise<void> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`POST ${url}: HTTP ${res.status}`);
}
