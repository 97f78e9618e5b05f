// Drives the real Worker module inside workerd with a chosen gateway config and a recording
// METRICS binding (miniflare's own is a no-op), and waits for its waitUntil work.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { createApp } from "../../src/app.js";
import type { Env } from "../../src/env.js";
import { VllmEngine } from "../../src/gen/vllm_engine_pb.js";
import { decodeDataPoint } from "../../src/metrics/schema.js";
import type { GatewayEvent } from "../../src/metrics/events.js";
import { createIsolateState, type IsolateState } from "../../src/routing/isolate.js";

export class RecordingDataset implements AnalyticsEngineDataset {
  readonly points: AnalyticsEngineDataPoint[] = [];
  writeDataPoint(point?: AnalyticsEngineDataPoint): void {
    if (point) this.points.push(point);
  }
  events(): GatewayEvent[] {
    return this.points.map(decodeDataPoint);
  }
  ofType<T extends GatewayEvent["type"]>(type: T): Extract<GatewayEvent, { type: T }>[] {
    return this.events().filter((e): e is Extract<GatewayEvent, { type: T }> => e.type === type);
  }
}

export interface TestGateway {
  metrics: RecordingDataset;
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** Resolves when every waitUntil task started so far has settled. */
  settle(): Promise<void>;
  engineClient(protocol?: "connect" | "grpc-web", useBinaryFormat?: boolean): Client<typeof VllmEngine>;
  /** The isolate state of this gateway's app (loads, breakers, ...). */
  isolate: IsolateState;
}

/** A gateway as a fresh isolate would see it: its own app, so breakers, loads and caches
 *  start empty (tests reuse engine names across clusters). */
export function testGateway(config: unknown, extraEnv: Record<string, unknown> = {}): TestGateway {
  const isolate = createIsolateState();
  const app = createApp(isolate);
  const metrics = new RecordingDataset();
  // Tests talk to an open data plane unless they configure auth themselves.
  const withAuth = { auth: { data_plane: "open" }, ...(config as Record<string, unknown>) };
  const env = { ...extraEnv, GATEWAY_CONFIG: JSON.stringify(withAuth), METRICS: metrics };
  const contexts: ExecutionContext[] = [];
  const doFetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const ctx = createExecutionContext();
    contexts.push(ctx);
    // connect-web asks for redirect "error", which workerd rejects.
    const request = new Request(input, { ...init, redirect: "manual" });
    return app.fetch(request, env as Env, ctx);
  };
  return {
    isolate,
    metrics,
    fetch: doFetch,
    async settle() {
      // Waited for here, not when the response is returned: a streamed response's head goes
      // out early, and work may be handed to waitUntil after it (a deferred Abort).
      await Promise.all(contexts.map((ctx) => waitOnExecutionContext(ctx)));
    },
    engineClient(protocol = "connect", useBinaryFormat = true) {
      const opts = { baseUrl: "http://gateway.test", useBinaryFormat, fetch: doFetch as typeof fetch };
      return createClient(VllmEngine, protocol === "grpc-web" ? createGrpcWebTransport(opts) : createConnectTransport(opts));
    },
  };
}
