// The sim's own gRPC-code -> HTTP-status table (google/rpc/code.proto), independent of the
// gateway's table in src/pd/errors.ts so the oracle can disagree with the code under test.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { httpStatusForCode } from "../../../sim/http-status.js";

describe("httpStatusForCode (sim)", () => {
  it("maps every gRPC code as google/rpc/code.proto documents", () => {
    expect(httpStatusForCode(Code.Canceled)).toBe(499);
    expect(httpStatusForCode(Code.Unknown)).toBe(500);
    expect(httpStatusForCode(Code.InvalidArgument)).toBe(400);
    expect(httpStatusForCode(Code.DeadlineExceeded)).toBe(504);
    expect(httpStatusForCode(Code.NotFound)).toBe(404);
    expect(httpStatusForCode(Code.AlreadyExists)).toBe(409);
    expect(httpStatusForCode(Code.PermissionDenied)).toBe(403);
    expect(httpStatusForCode(Code.ResourceExhausted)).toBe(429);
    expect(httpStatusForCode(Code.FailedPrecondition)).toBe(400);
    expect(httpStatusForCode(Code.Aborted)).toBe(409);
    expect(httpStatusForCode(Code.OutOfRange)).toBe(400);
    expect(httpStatusForCode(Code.Unimplemented)).toBe(501);
    expect(httpStatusForCode(Code.Internal)).toBe(500);
    expect(httpStatusForCode(Code.Unavailable)).toBe(503);
    expect(httpStatusForCode(Code.DataLoss)).toBe(500);
    expect(httpStatusForCode(Code.Unauthenticated)).toBe(401);
  });
});

describe("sim imports", () => {
  it("imports nothing from src/ but the generated wire types", async () => {
    const { readdir, readFile } = await import("node:fs/promises");
    const dir = new URL("../../../sim/", import.meta.url);
    const offenders: string[] = [];
    for (const f of await readdir(dir)) {
      if (!f.endsWith(".ts")) continue;
      const text = await readFile(new URL(f, dir), "utf8");
      for (const m of text.matchAll(/from\s+"(\.\.\/src\/[^"]+)"/g)) if (!m[1]!.startsWith("../src/gen/")) offenders.push(`${f}: ${m[1]}`);
    }
    expect(offenders).toEqual([]);
  });
});
