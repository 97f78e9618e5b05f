// The error renderers (src/errors/): which protocol a request's client reads, and each shape,
// with the stable code, the table's Connect code and `param` kept.
import { Code } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../../../src/core/errors.js";
import { connectCodeName } from "../../../src/errors/connect.js";
import { anthropicErrorEvent } from "../../../src/errors/anthropic.js";
import { errorProtocolOf } from "../../../src/errors/protocol.js";
import { reject, renderError, toGatewayError } from "../../../src/errors/render.js";

const req = (contentType: string | undefined, path = "/vllm.grpc.engine.VllmEngine/Generate", headers: Record<string, string> = {}) =>
  new Request(`http://g${path}`, { method: "POST", headers: { ...(contentType ? { "content-type": contentType } : {}), ...headers } });

describe("errorProtocolOf", () => {
  it.each([
    ["application/grpc-web+proto", "/vllm.grpc.engine.VllmEngine/Generate", {}, "grpc-web"],
    ["application/grpc-web", "/nowhere", {}, "grpc-web"],
    ["application/connect+json", "/vllm.grpc.engine.VllmEngine/Generate", {}, "connect-stream"],
    ["application/proto", "/vllm.grpc.engine.VllmEngine/Abort", {}, "connect"],
    ["application/json", "/vllm.grpc.engine.VllmEngine/Abort", {}, "connect"],
    ["application/json", "/some.Service/Method", { "connect-protocol-version": "1" }, "connect"],
    [undefined, "/vllm.grpc.engine.VllmEngine/Nope", {}, "connect"],
    ["application/json", "/v1/chat/completions", {}, "openai"],
    [undefined, "/v1/nope", {}, "openai"],
    [undefined, "/admin/engines", {}, "openai"],
    ["application/json", "/v1/messages", {}, "anthropic"],
    ["application/json", "/v1/messages/count_tokens", {}, "anthropic"],
    ["application/json", "/v1/messagesx", {}, "openai"],
  ] as const)("%s %s %j -> %s", (ct, path, headers, protocol) => {
    expect(errorProtocolOf(req(ct, path, headers))).toBe(protocol);
  });
});

describe("renderError, one shape per protocol", () => {
  const err = () => new GatewayError("no_healthy_engine", 503, "No decode engine of model 'm' can take traffic now", undefined, "model");

  it("gRPC-web: trailers-only 200, the table's code in grpc-status, the message percent-encoded", () => {
    const r = renderError(req("application/grpc-web+proto"), err());
    expect([r.status, r.headers.get("grpc-status"), decodeURIComponent(r.headers.get("grpc-message")!)]).toEqual([200, String(Code.Unavailable), err().message]);
    expect(r.headers.get("content-type")).toBe("application/grpc-web+proto");
    expect(r.headers.get("x-gateway-error-code")).toBe("no_healthy_engine");
  });

  it("Connect streaming: an end-stream frame with the Connect code, the stable code in the headers", async () => {
    const r = renderError(req("application/connect+proto"), err(), { "retry-after": "1" });
    expect([r.status, r.headers.get("content-type"), r.headers.get("retry-after")]).toEqual([200, "application/connect+proto", "1"]);
    const bytes = new Uint8Array(await r.arrayBuffer());
    expect(bytes[0]).toBe(2);
    expect(new DataView(bytes.buffer).getUint32(1)).toBe(bytes.length - 5);
    expect(JSON.parse(new TextDecoder().decode(bytes.slice(5)))).toEqual({ error: { code: "unavailable", message: err().message } });
    expect(r.headers.get("x-gateway-error-code")).toBe("no_healthy_engine");
  });

  it("Connect unary: the error JSON with the gateway's status", async () => {
    const r = renderError(req("application/json", "/vllm.grpc.engine.VllmEngine/Abort"), new GatewayError("decode_timeout", 504, "too slow"));
    expect(r.status).toBe(504);
    expect(await r.json()).toEqual({ code: "deadline_exceeded", message: "too slow" });
  });

  it("OpenAI: the OpenAI shape, param kept, type from the status", async () => {
    const r = renderError(req("application/json", "/v1/chat/completions"), err(), { "x-request-id": "r1" });
    expect([r.status, r.headers.get("x-gateway-error-code"), r.headers.get("x-request-id")]).toEqual([503, "no_healthy_engine", "r1"]);
    expect(await r.json()).toEqual({ error: { message: err().message, type: "server_error", param: "model", code: "no_healthy_engine" } });
  });

  it.each([
    [400, "invalid_request_error"],
    [401, "authentication_error"],
    [403, "permission_error"],
    [404, "invalid_request_error"],
    [413, "invalid_request_error"],
    [429, "rate_limit_error"],
    [499, "client_cancelled"],
    [503, "server_error"],
  ])("OpenAI type for %i: %s, wherever it was raised", async (status, type) => {
    const r = reject(req(undefined, "/v1/x"), status, "c", "m");
    expect(((await r.json()) as { error: { type: string } }).error.type).toBe(type);
  });

  it("a Connect client gets a name for every code (never unknown for a known code)", () => {
    for (let c = Code.Canceled; c <= Code.Unauthenticated; c++) expect(connectCodeName(c)).toBe(codeToString(c));
  });

  it("anything that is not a GatewayError is a 500 internal_error without its message", () => {
    const e = toGatewayError(new Error("secret"), "test");
    expect([e.code, e.status, e.message, e.connectCode]).toEqual(["internal_error", 500, "internal gateway error", Code.Internal]);
  });
});

describe("the Anthropic shape (/v1/messages)", () => {
  it.each([
    [400, 400, "invalid_request_error"],
    [401, 401, "authentication_error"],
    [403, 403, "permission_error"],
    [404, 404, "not_found_error"],
    [413, 413, "request_too_large"],
    [422, 422, "invalid_request_error"],
    [429, 429, "rate_limit_error"],
    [500, 500, "api_error"],
    [502, 502, "api_error"],
    [503, 529, "overloaded_error"],
    [504, 504, "api_error"],
  ])("status %i -> %i %s, the stable code in the header", async (status, sent, type) => {
    const r = reject(req("application/json", "/v1/messages"), status, "some_code", "what went wrong");
    expect([r.status, r.headers.get("x-gateway-error-code"), r.headers.get("content-type")]).toEqual([sent, "some_code", "application/json"]);
    expect(await r.json()).toEqual({ type: "error", error: { type, message: "what went wrong" } });
  });

  it("the stream's error event is Anthropic's", () => {
    expect(anthropicErrorEvent(new GatewayError("decode_unavailable", 502, "engine 'd' failed"))).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"engine \'d\' failed"}}\n\n',
    );
  });
});
