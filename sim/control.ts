// HTTP control API for creating and deleting clusters on demand: tests running inside workerd
// cannot spawn processes or bind sockets, so they ask this Node server to do it for them.
import * as http from "node:http";
import type { Socket } from "node:net";
import { ListenError, startCluster } from "./cluster.js";
import { BodyError, readJson, sendEmpty, sendJson } from "./http-util.js";
import { SpecError, validateClusterSpec } from "./spec.js";
import type { RunningCluster } from "./types.js";

function describe(c: RunningCluster) {
  return {
    id: c.id,
    engines: c.engines.map((e) => ({ name: e.spec.name, url: e.url, grpcUrl: e.grpcUrl, bootstrapPort: e.bootstrapPort, spec: e.spec })),
  };
}

export async function startControlServer(port = 0): Promise<{ url: string; close(): Promise<void> }> {
  const clusters = new Map<string, RunningCluster>();

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? "/", "http://control").pathname.replace(/\/+$/, "");
    if (path === "/clusters") {
      if (req.method === "GET") return sendJson(res, 200, [...clusters.values()].map(describe));
      if (req.method === "DELETE") {
        const all = [...clusters.values()];
        clusters.clear();
        await Promise.all(all.map((c) => c.close()));
        return sendEmpty(res, 204);
      }
      if (req.method === "POST") {
        const spec = validateClusterSpec(await readJson(req));
        const cluster = await startCluster(spec);
        clusters.set(cluster.id, cluster);
        return sendJson(res, 201, describe(cluster));
      }
      return sendJson(res, 405, { error: `method ${req.method} not allowed on /clusters` });
    }
    const m = /^\/clusters\/([^/]+)$/.exec(path);
    if (m) {
      const id = decodeURIComponent(m[1]!);
      const cluster = clusters.get(id);
      if (!cluster) return sendJson(res, 404, { error: `no cluster "${id}"` });
      if (req.method === "GET") return sendJson(res, 200, describe(cluster));
      if (req.method === "DELETE") {
        clusters.delete(id);
        await cluster.close();
        return sendEmpty(res, 204);
      }
      return sendJson(res, 405, { error: `method ${req.method} not allowed on /clusters/:id` });
    }
    const op = /^\/clusters\/([^/]+)\/(kill|delay)$/.exec(path);
    if (op && req.method === "POST") {
      const cluster = clusters.get(decodeURIComponent(op[1]!));
      if (!cluster) return sendJson(res, 404, { error: `no cluster "${op[1]}"` });
      const body = (await readJson(req)) as { cluster?: unknown; networkDelayMs?: unknown };
      if (typeof body.cluster !== "string") return sendJson(res, 400, { error: "cluster: must be the name of a cluster of engines" });
      try {
        if (op[2] === "kill") await cluster.killCluster(body.cluster);
        else {
          const ms = body.networkDelayMs;
          if (!Number.isInteger(ms) || (ms as number) < 0 || (ms as number) > 60_000) return sendJson(res, 400, { error: "networkDelayMs: must be an integer in 0..60000" });
          cluster.setNetworkDelay(body.cluster, ms as number);
        }
      } catch (err) {
        return sendJson(res, 404, { error: (err as Error).message });
      }
      return sendEmpty(res, 204);
    }
    if (path === "/health" && req.method === "GET") return sendEmpty(res, 200);
    sendJson(res, 404, { error: `no route ${path}` });
  };

  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (err instanceof SpecError || err instanceof BodyError) sendJson(res, 400, { error: err.message });
      else if (err instanceof ListenError) sendJson(res, 409, { error: err.message });
      else sendJson(res, 500, { error: String(err) });
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const addr = server.address();
  const bound = typeof addr === "object" && addr ? addr.port : port;
  return {
    url: `http://127.0.0.1:${bound}`,
    async close() {
      const all = [...clusters.values()];
      clusters.clear();
      await Promise.all(all.map((c) => c.close()));
      await new Promise<void>((done) => {
        server.close(() => done());
        for (const s of sockets) s.destroy();
      });
    },
  };
}
