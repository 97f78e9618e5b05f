// Errors answered outside a surface's own handlers (the 404 handler, the config check,
// onError, middleware) reach each client in its own protocol (src/errors/): a connect-es
// client decodes them as ConnectErrors with the table's code, an OpenAI client gets the
// OpenAI shape with `param` kept.
import { createExecutionContext } from "cloudflare:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { GatewayError } from "../../src/core/errors.js";
import type { Env } from "../../src/env.js";
import { VllmEngine } from "../../src/gen/vllm_engine_pb.js";
import { testGateway } from "../support/gateway.js";

const ENGINE = "http://gateway.test/vllm.grpc.engine.VllmEngine";

async function connectErrorOf(call: Promise<unknown> | AsyncIterable<unknown>): Promise<ConnectError> {
  try {
    if (Symbol.asyncIterator in call) for await (const _ of call);
    else await call;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("the call succeeded");
}

interface OpenAiError {
  error: { message: string; type: string; param: string | null; code: string };
}

describe("an unknown path gets its protocol's 404", () => {
  const gw = testGateway({ models: {} });

  it("OpenAI: 404 route_not_found, type invalid_request_error (as for an unknown model)", async () => {
    const res = await gw.fetch("http://gateway.test/v1/embeddings", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(404);
    expect(res.headers.get("x-gateway-error-code")).toBe("route_not_found");
    expect(await res.json()).toEqual({ error: { message: "no route for POST /v1/embeddings", type: "invalid_request_error", param: null, code: "route_not_found" } });
  });

  it("Connect: an unknown method is UNIMPLEMENTED to a connect-es client, unary and streaming", async () => {
    const unary = await gw.fetch(`${ENGINE}/Tokenize`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(unary.status).toBe(404);
    expect(await unary.json()).toEqual({ code: "unimplemented", message: "/vllm.grpc.engine.VllmEngine/Tokenize: no such VllmEngine method" });

    // A client pointed at a path the gateway does not serve: the same, in its own framing.
    for (const useBinaryFormat of [true, false]) {
      const misplaced = createClient(VllmEngine, createConnectTransport({ baseUrl: "http://gateway.test/engines", useBinaryFormat, fetch: gw.fetch as typeof fetch }));
      const err = await connectErrorOf(misplaced.generate({ requestId: "x", input: { case: "text", value: "hi" } }));
      expect(err.code).toBe(Code.Unimplemented);
      expect(err.rawMessage).toBe("no route for POST /engines/vllm.grpc.engine.VllmEngine/Generate");
      expect(err.metadata.get("x-gateway-error-code")).toBe("route_not_found");
    }
  });

  it("Connect: a GET on a method path (no such route) is a Connect 404, not the OpenAI shape", async () => {
    const res = await gw.fetch(`${ENGINE}/HealthCheck`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ code: "unimplemented", message: "no route for GET /vllm.grpc.engine.VllmEngine/HealthCheck" });
  });

  it("gRPC-web: a trailers-only UNIMPLEMENTED", async () => {
    const res = await gw.fetch("http://gateway.test/vllm.grpc.engine.Other/Generate", { method: "POST", headers: { "content-type": "application/grpc-web+proto" }, body: new Uint8Array(5) });
    expect([res.status, res.headers.get("grpc-status"), res.headers.get("x-gateway-error-code")]).toEqual([200, String(Code.Unimplemented), "route_not_found"]);
  });
});

describe("config_invalid reaches each client in its protocol", () => {
  const gw = testGateway({ models: { m: { prefill: "not a list" } } });
  const clients = {
    connect: createClient(VllmEngine, createConnectTransport({ baseUrl: "http://gateway.test", fetch: gw.fetch as typeof fetch })),
    "connect-json": createClient(VllmEngine, createConnectTransport({ baseUrl: "http://gateway.test", useBinaryFormat: false, fetch: gw.fetch as typeof fetch })),
    "grpc-web": createClient(VllmEngine, createGrpcWebTransport({ baseUrl: "http://gateway.test", fetch: gw.fetch as typeof fetch })),
  };

  it.each(Object.keys(clients) as (keyof typeof clients)[])("%s: Generate and HealthCheck fail UNAVAILABLE with config_invalid naming the field", async (name) => {
    const client = clients[name];
    for (const err of [
      await connectErrorOf(client.generate({ requestId: "x", input: { case: "text", value: "hi" } }, { headers: { "x-model": "m" } })),
      await connectErrorOf(client.healthCheck({})),
    ]) {
      expect(err.code).toBe(Code.Unavailable);
      expect(err.metadata.get("x-gateway-error-code")).toBe("config_invalid");
      expect(err.rawMessage).toContain("models.m.prefill");
    }
  });

  it("OpenAI: 503 in the OpenAI shape, type server_error", async () => {
    const res = await gw.fetch("http://gateway.test/v1/models");
    expect(res.status).toBe(503);
    const body = (await res.json()) as OpenAiError;
    expect(body.error).toMatchObject({ type: "server_error", param: null, code: "config_invalid" });
    expect(body.error.message).toContain("models.m.prefill");
  });
});

describe("onError keeps the error's code, status and param, in the caller's protocol", () => {
  const env = { GATEWAY_CONFIG: JSON.stringify({ auth: { data_plane: "open" }, models: {} }) } as Env;
  const app = createApp();
  app.post("/v1/boom", () => {
    throw new GatewayError("invalid_request", 400, "temperature: must be at most 2", undefined, "temperature");
  });
  app.post("/vllm.grpc.other.Svc/Boom", () => {
    throw new GatewayError("decode_timeout", 504, "Decode worker sent no first frame within 10 ms (decode engine 'd')");
  });
  const call = (path: string, headers: Record<string, string> = {}) => app.fetch(new Request(`http://gateway.test${path}`, { method: "POST", headers, body: "{}" }), env, createExecutionContext());

  it("OpenAI: param survives", async () => {
    const res = await call("/v1/boom", { "content-type": "application/json" });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { message: "temperature: must be at most 2", type: "invalid_request_error", param: "temperature", code: "invalid_request" } });
  });

  it("Connect: deadline_exceeded, not unknown", async () => {
    const unary = await call("/vllm.grpc.other.Svc/Boom", { "content-type": "application/json", "connect-protocol-version": "1" });
    expect([unary.status, ((await unary.json()) as { code: string }).code]).toEqual([504, "deadline_exceeded"]);
    const stream = await call("/vllm.grpc.other.Svc/Boom", { "content-type": "application/connect+json" });
    const bytes = new Uint8Array(await stream.arrayBuffer());
    expect(JSON.parse(new TextDecoder().decode(bytes.slice(5)))).toEqual({ error: { code: "deadline_exceeded", message: "Decode worker sent no first frame within 10 ms (decode engine 'd')" } });
    expect(stream.headers.get("x-gateway-error-code")).toBe("decode_timeout");
    const grpcWeb = await call("/vllm.grpc.other.Svc/Boom", { "content-type": "application/grpc-web+proto" });
    expect(grpcWeb.headers.get("grpc-status")).toBe(String(Code.DeadlineExceeded));
  });
});
