// A chunked body over limits.max_body_bytes, then a normal request, through `wrangler dev` and
// directly against the Worker's own workerd socket. Cancelling the refused body makes workerd
// reset the connection: on the same socket the next request is lost, and through wrangler dev's
// proxy (which keeps its connections to workerd) the next request, even on a new client
// connection, is answered 503 "Your worker restarted mid-request". The gateway drains a
// refused body within a bound (core/body.ts REFUSED_BODY_DRAIN), so each answers 413 then 200.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster } from "../../sim/cluster.js";
import type { RunningCluster } from "../../sim/types.js";
import { startWranglerDev, type WranglerDev } from "../../scripts/wrangler-dev.js";
import { workerdPort } from "../support/workerd-socket.js";

const LIMIT = 64 * 1024;
/** 2 MiB in 64 KiB chunks: well over the limit, well within the drain bound. */
const BODY_CHUNKS = 32;
let cluster: RunningCluster;
let gateway: WranglerDev;
let direct: number;

beforeAll(async () => {
  cluster = await startCluster({
    engines: [
      { name: "p", role: "prefill", kvConnector: "NixlConnector", model: "m", port: 0 },
      { name: "d", role: "decode", kvConnector: "NixlConnector", model: "m", port: 0 },
    ],
  });
  const engines = (name: string) => [{ name, url: cluster.engine(name).url, transport: "openai-http" }];
  gateway = await startWranglerDev({ auth: { data_plane: "open" }, limits: { max_body_bytes: LIMIT }, models: { m: { prefill: engines("p"), decode: engines("d") } } });
  direct = await workerdPort(gateway);
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  await cluster?.close();
});

const SMALL = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
const smallRequest = () => `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${SMALL.length}\r\n\r\n${SMALL}`;

function chunkedRequest(): Buffer[] {
  const head = Buffer.from("POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n");
  const chunk = Buffer.concat([Buffer.from("10000\r\n"), Buffer.alloc(0x10000, 0x61), Buffer.from("\r\n")]);
  return [head, ...Array<Buffer>(BODY_CHUNKS).fill(chunk), Buffer.from("0\r\n\r\n")];
}

/** Statuses of the complete responses (each with a content-length) in `raw`. */
function statuses(raw: Buffer): number[] {
  const out: number[] = [];
  let at = 0;
  for (;;) {
    const end = raw.indexOf("\r\n\r\n", at);
    if (end < 0) return out;
    const head = raw.subarray(at, end).toString("latin1");
    const length = Number(/^content-length:\s*(\d+)/im.exec(head)?.[1] ?? Number.NaN);
    if (Number.isNaN(length) || raw.length < end + 4 + length) return out;
    out.push(Number(head.slice(9, 12)));
    at = end + 4 + length;
  }
}

/** Writes `parts` on one connection; the statuses once `expected` responses arrived, or what
 *  arrived before the connection closed or 15 s passed. */
function exchange(port: number, parts: (Buffer | string)[], expected: number): Promise<number[]> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let raw = Buffer.alloc(0);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(statuses(raw));
    };
    const timer = setTimeout(finish, 15_000);
    socket.on("data", (d: Buffer) => {
      raw = Buffer.concat([raw, d]);
      if (statuses(raw).length >= expected) finish();
    });
    socket.on("error", () => undefined); // a reset shows as missing responses
    socket.on("close", finish);
    socket.on("connect", async () => {
      for (const part of parts) {
        if (socket.destroyed) return;
        if (!socket.write(part)) await new Promise((r) => socket.once("drain", r));
      }
    });
  });
}

describe.each([
  { via: "wrangler dev", port: () => Number(new URL(gateway.url).port) },
  { via: "workerd's own socket", port: () => direct },
])("a chunked body over the limit, then a normal request, $via", ({ port }) => {
  it("on one connection: 413, then 200", async () => {
    for (let round = 0; round < 3; round++) {
      expect(await exchange(port(), [...chunkedRequest(), smallRequest()], 2)).toEqual([413, 200]);
    }
  });

  it("on a new connection each: 413, then 200", async () => {
    for (let round = 0; round < 3; round++) {
      expect(await exchange(port(), chunkedRequest(), 1)).toEqual([413]);
      expect(await exchange(port(), [smallRequest()], 1)).toEqual([200]);
    }
  });
});
