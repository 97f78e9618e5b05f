// app.onError: the one place an error no handler answered becomes a response, in the
// caller's protocol, never leaking internals.
import { createExecutionContext } from "cloudflare:test";
import { expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { GatewayError } from "../../src/core/errors.js";
import type { Env } from "../../src/env.js";

const env = { GATEWAY_CONFIG: JSON.stringify({ auth: { data_plane: "open" }, models: {} }) } as Env;

it("an unexpected error is a 500 internal_error without its message; a GatewayError keeps its code", async () => {
  const app = createApp();
  app.get("/boom", () => {
    throw new Error("secret internals");
  });
  app.get("/teapot", () => {
    throw new GatewayError("teapot", 418, "short and stout");
  });
  const boom = await app.fetch(new Request("http://gateway.test/boom"), env, createExecutionContext());
  expect(boom.status).toBe(500);
  expect(boom.headers.get("x-gateway-error-code")).toBe("internal_error");
  expect(await boom.text()).not.toContain("secret internals");
  const teapot = await app.fetch(new Request("http://gateway.test/teapot"), env, createExecutionContext());
  expect(teapot.status).toBe(418);
  expect(((await teapot.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "teapot", message: "short and stout" });
});
