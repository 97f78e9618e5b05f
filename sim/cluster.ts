// Starts a set of sim engines on 127.0.0.1: per engine an HTTP/1.1 listener (Connect, gRPC-web,
// OpenAI API, /sim/*, NIXL side channel), an optional h2c listener for plain gRPC, and for
// Mooncake engines a bootstrap listener. close() releases every socket and timer.
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { answerMalformed } from "./malformed.js";
import { randomUUID } from "node:crypto";
import * as http from "node:http";
import * as http2 from "node:http2";
import type { Socket } from "node:net";
import { SimEngine } from "./engine.js";
import { vllmEngineRoutes } from "./grpc-service.js";
import { bootstrapHandler, engineHttpHandler } from "./sim-routes.js";
import { validateClusterSpec } from "./spec.js";
import type { ClusterSpec, EngineSpec, RunningCluster, RunningEngine } from "./types.js";

const HOST = "127.0.0.1";
const RPC_PREFIX = "/vllm.grpc.engine.VllmEngine/";

export class ListenError extends Error {}

const GENERATION_PATHS = ["/v1/completions", "/v1/chat/completions", "/v1/responses", "/v1/messages", `${RPC_PREFIX}Generate`];

/** Generation requests on the HTTP/1.1 listener: the OpenAI, Responses and Messages routes and
 *  the Generate RPC. */
function isGeneration(req: http.IncomingMessage): boolean {
  if (req.method !== "POST") return false;
  return GENERATION_PATHS.includes((req.url ?? "").split("?")[0]!);
}

interface Listener {
  port: number;
  close(): Promise<void>;
}

function listen(server: http.Server | http2.Http2Server, port: number, what: string): Promise<Listener> {
  // Track sockets / sessions ourselves: keep-alive clients must not hold close() open.
  const sockets = new Set<Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  server.on("session", (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(new ListenError(err.code === "EADDRINUSE" ? `${what}: port ${port} is already in use` : `${what}: ${err.message}`));
    };
    server.once("error", onError);
    server.listen(port, HOST, () => {
      server.off("error", onError);
      const addr = server.address();
      const bound = typeof addr === "object" && addr ? addr.port : port;
      resolve({
        port: bound,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            for (const s of sessions) s.destroy();
            for (const s of sockets) s.destroy();
          }),
      });
    });
  });
}

interface StartedEngine {
  running: RunningEngine;
  engine: SimEngine;
  listeners: Listener[];
}

async function startEngine(spec: EngineSpec, index: number, recentRequests: number | undefined): Promise<StartedEngine> {
  const engine = new SimEngine(spec, recentRequests);
  const listeners: Listener[] = [];
  const where = (field: string) => `engines[${index}].${field} (${spec.name})`;
  try {
    const routes = vllmEngineRoutes(engine);
    const rpcHttp1 = connectNodeAdapter({ routes, connect: true, grpcWeb: true, grpc: false });
    const h1 = http.createServer((req, res) => afterNetworkDelay(engine, req, () => {
      if (isGeneration(req) && engine.faults.takeDropConnection()) {
        engine.stats.add("connectionsDropped");
        req.socket.destroy();
        return;
      }
      if (req.url?.startsWith(RPC_PREFIX)) {
        if (!answerMalformed(engine, req, res)) rpcHttp1(req, res);
      }
      else engineHttpHandler(engine, req, res);
    }));
    h1.keepAliveTimeout = engine.cfg.keepAliveTimeoutMs;
    const main = await listen(h1, spec.port ?? 0, where("port"));
    listeners.push(main);
    engine.httpPort = main.port;
    const resolved: EngineSpec = { ...spec, port: main.port };
    const running: RunningEngine = { spec: resolved, url: `http://${HOST}:${main.port}` };

    if (spec.grpcPort !== undefined) {
      const h2Rpc = connectNodeAdapter({ routes, grpc: true, connect: true, grpcWeb: true });
      const h2 = http2.createServer((req, res) => afterNetworkDelay(engine, req, () => h2Rpc(req, res)));
      const g = await listen(h2, spec.grpcPort, where("grpcPort"));
      listeners.push(g);
      resolved.grpcPort = g.port;
      running.grpcUrl = `http://${HOST}:${g.port}`;
    }
    if (spec.kvConnector === "MooncakeConnector") {
      const b = await listen(
        http.createServer((req, res) => bootstrapHandler(engine, req, res)),
        spec.bootstrapPort ?? 0,
        where("bootstrapPort"),
      );
      listeners.push(b);
      resolved.bootstrapPort = b.port;
      running.bootstrapPort = b.port;
    }
    return { running, engine, listeners };
  } catch (err) {
    await Promise.all(listeners.map((l) => l.close()));
    await engine.close();
    throw err;
  }
}

/** The cluster's network delay, for requests from outside it: the KV side channel (/sim/*
 *  between engines of one cluster) is not delayed, nor are the test's own /sim/ calls. */
function afterNetworkDelay(engine: SimEngine, req: { url?: string | undefined }, handle: () => void): void {
  if (engine.networkDelayMs <= 0 || req.url?.startsWith("/sim/")) return handle();
  setTimeout(handle, engine.networkDelayMs);
}

let clusterSeq = 0;

/** Starts every engine of the spec; rejects (with nothing left listening) if any cannot start. */
export async function startCluster(spec: ClusterSpec): Promise<RunningCluster> {
  validateClusterSpec(spec);
  const started: StartedEngine[] = [];
  try {
    for (const [i, e] of spec.engines.entries()) started.push(await startEngine(e, i, spec.recentRequests));
  } catch (err) {
    await closeAll(started);
    throw err;
  }
  for (const s of started) s.engine.networkDelayMs = spec.clusters?.[s.engine.cfg.cluster]?.networkDelayMs ?? 0;
  let closed: Promise<void> | undefined;
  const engines = started.map((s) => s.running);
  const killed = new Set<StartedEngine>();
  const inCluster = (name: string) => {
    const of = started.filter((s) => s.engine.cfg.cluster === name);
    if (of.length === 0) throw new Error(`no engine in cluster "${name}"`);
    return of;
  };
  return {
    id: `cluster-${++clusterSeq}-${randomUUID().slice(0, 8)}`,
    engines,
    engine(name: string): RunningEngine {
      const e = engines.find((x) => x.spec.name === name);
      if (!e) throw new Error(`no engine named "${name}" (have: ${engines.map((x) => x.spec.name).join(", ")})`);
      return e;
    },
    async killCluster(name: string) {
      const victims = inCluster(name).filter((s) => !killed.has(s));
      for (const s of victims) killed.add(s);
      // Listeners first: new connections are refused while running requests are cut off.
      await Promise.all(victims.flatMap((s) => s.listeners.map((l) => l.close())));
      await Promise.all(victims.map((s) => s.engine.close()));
    },
    setNetworkDelay(name: string, ms: number) {
      for (const s of inCluster(name)) s.engine.networkDelayMs = ms;
    },
    close: () => (closed ??= closeAll(started.filter((s) => !killed.has(s)))),
  };
}

async function closeAll(started: StartedEngine[]): Promise<void> {
  // Stop requests first so open streams end with a frame instead of a reset.
  await Promise.all(started.map((s) => s.engine.close()));
  await Promise.all(started.flatMap((s) => s.listeners.map((l) => l.close())));
}
