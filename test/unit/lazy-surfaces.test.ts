// What app.ts and backends/vllm-engine.ts spell out so that Connect and the generated
// descriptors load on first use: it must match the generated service.
import { describe, expect, it } from "vitest";
import { VllmEngine } from "../../src/gen/vllm_engine_pb.js";
import { ENGINE_SERVICE_PATH as routerPath } from "../../src/api/engine/router.js";
import { ENGINE_SERVICE_PATH } from "../../src/app.js";
import { Code as ConnectCode } from "@connectrpc/connect";
import { Code } from "../../src/core/grpc-code.js";
import { STREAMING_METHODS, UNARY_METHODS } from "../../src/backends/vllm-engine.js";
import { EngineClients } from "../../src/backends/engine-clients.js";

describe("lazily loaded surfaces", () => {
  it("the engine surface's path is the generated service's", () => {
    expect(ENGINE_SERVICE_PATH).toBe(routerPath);
    expect(ENGINE_SERVICE_PATH).toBe(`/${VllmEngine.typeName}/`);
  });
  it("the stand-in client has every method of the service, streaming ones as streams", () => {
    const methods = Object.values(VllmEngine.method);
    expect([...UNARY_METHODS, ...STREAMING_METHODS].sort()).toEqual(methods.map((m) => m.localName).sort());
    expect([...STREAMING_METHODS].sort()).toEqual(methods.filter((m) => m.methodKind === "server_streaming").map((m) => m.localName).sort());
  });
  it("the spelled-out gRPC codes are Connect's, both ways", () => {
    expect({ ...Code }).toEqual({ ...ConnectCode });
  });
  it("a client works before and after the module is in", async () => {
    const c = new EngineClients().vllmEngine({ url: "http://127.0.0.1:9", transport: "connect" });
    await expect(c.healthCheck({}, { timeoutMs: 200 })).rejects.toBeDefined();
  });
});
