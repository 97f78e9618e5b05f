// A body refused for its size, sent without a content-length, is read to its end before the
// refusal when the rest fits core/body.ts's REFUSED_BODY_DRAIN (16 MiB), and cancelled when it
// does not: on every surface that reads a client body (OpenAI, VllmEngine unary JSON, Connect
// and gRPC-web streams, the admin API). A cancelled body makes workerd reset the connection,
// which `wrangler dev`'s proxy turns into a 503 for the next request (test/e2e/refused-body.test.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REFUSED_BODY_DRAIN } from "../../src/core/body.js";
import { adminGateway, ADMIN_TOKEN } from "../support/admin.js";
import { pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
});
afterAll(async () => {
  await cluster.close();
});

const LIMIT = 4096;
const CHUNK = 64 * 1024;

/** A body of `bytes` bytes (in CHUNK pieces) that records how much was pulled and whether it was cancelled. */
function countedBody(bytes: number) {
  const seen = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>(
    {
      pull(c) {
        if (seen.pulled >= bytes) return c.close();
        const n = Math.min(CHUNK, bytes - seen.pulled);
        seen.pulled += n;
        c.enqueue(new Uint8Array(n).fill(0x61));
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { body, seen };
}

const SURFACES = [
  { name: "OpenAI chat", path: "/v1/chat/completions", contentType: "application/json", limit: LIMIT },
  { name: "VllmEngine unary JSON", path: "/vllm.grpc.engine.VllmEngine/HealthCheck", contentType: "application/json", limit: LIMIT },
  { name: "Connect stream", path: "/vllm.grpc.engine.VllmEngine/Generate", contentType: "application/connect+json", limit: LIMIT },
  { name: "gRPC-web", path: "/vllm.grpc.engine.VllmEngine/Generate", contentType: "application/grpc-web+proto", limit: LIMIT },
  { name: "admin API", path: "/admin/engines", contentType: "application/json", limit: 64 * 1024 },
];

async function send(path: string, contentType: string, body: ReadableStream<Uint8Array>) {
  const gw = adminGateway({ ...pairConfig(cluster), limits: { max_body_bytes: LIMIT } });
  return gw.fetch(`http://gateway.test${path}`, {
    method: "POST",
    headers: { "content-type": contentType, authorization: `Bearer ${ADMIN_TOKEN}` },
    body,
  });
}

describe("a refused body without a content-length", () => {
  it.each(SURFACES)("$name: read to its end within the drain bound, then refused", async ({ path, contentType, limit }) => {
    const size = limit + 3 * CHUNK + 17;
    const { body, seen } = countedBody(size);
    const res = await send(path, contentType, body);
    expect(res.headers.get("x-gateway-error-code")).toBe("body_too_large");
    await res.arrayBuffer();
    expect(seen).toEqual({ pulled: size, cancelled: false });
  });

  it.each(SURFACES)("$name: cancelled once the rest passes the drain bound", async ({ path, contentType, limit }) => {
    const size = limit + REFUSED_BODY_DRAIN.maxBytes + 4 * CHUNK;
    const { body, seen } = countedBody(size);
    const res = await send(path, contentType, body);
    expect(res.headers.get("x-gateway-error-code")).toBe("body_too_large");
    await res.arrayBuffer();
    expect(seen.cancelled).toBe(true);
    expect(seen.pulled).toBeLessThan(size);
    expect(seen.pulled).toBeGreaterThan(REFUSED_BODY_DRAIN.maxBytes);
  });
});
