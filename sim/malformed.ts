// Fault injection below the RPC layer: a Generate answered with bytes a real servicer would
// never send (an unparsable protobuf message, a frame cut short, or after one good message a
// frame cut short, no end-of-stream at all, or the connection lost), so gateways can prove
// they map broken engine output to an error instead of crashing or hanging.
import type http from "node:http";
import type { SimEngine } from "./engine.js";

export type MalformedKind = "garbage" | "truncated" | "cut-after-frame" | "no-end" | "reset-after-frame";
export const MALFORMED_KINDS: readonly MalformedKind[] = ["garbage", "truncated", "cut-after-frame", "no-end", "reset-after-frame"];

/** A GenerateResponse chunk with token id 1, enveloped: a frame a client decodes fine. */
const GOOD_FRAME = Buffer.from([0, 0, 0, 0, 5, 0x0a, 0x03, 0x0a, 0x01, 0x01]);

/** Answers the request itself and returns true when a malformedResponse fault applies. */
export function answerMalformed(engine: SimEngine, req: http.IncomingMessage, res: http.ServerResponse): boolean {
  if (!req.url?.endsWith("/Generate")) return false;
  const kind = engine.faults.takeMalformed();
  if (!kind) return false;
  engine.stats.add("generateRequests");
  req.resume();
  const contentType = req.headers["content-type"] ?? "application/connect+proto";
  res.writeHead(200, { "content-type": contentType });
  if (kind === "garbage") {
    // Field 1 declared as a length-delimited record longer than the message: illegal protobuf.
    const payload = Buffer.from([0x0a, 0x7f, 0x01, 0x02]);
    res.write(Buffer.concat([Buffer.from([0, 0, 0, 0, payload.length]), payload]));
    res.end(Buffer.concat([Buffer.from([2, 0, 0, 0, 2]), Buffer.from("{}")]));
  } else if (kind === "truncated") {
    // An envelope announcing 100 bytes, of which 3 arrive before the connection closes.
    res.end(Buffer.from([0, 0, 0, 0, 100, 0x0a, 0x01, 0x61]));
  } else if (kind === "cut-after-frame") {
    res.write(GOOD_FRAME);
    setTimeout(() => res.end(Buffer.from([0, 0, 0, 0, 100, 0x0a, 0x01, 0x61])), 20);
  } else if (kind === "reset-after-frame") {
    // An engine process that dies mid-stream: the connection goes without the body's end
    // (no last chunk), so the client's read of the body fails.
    res.write(GOOD_FRAME);
    setTimeout(() => res.socket?.destroy(), 20);
  } else {
    res.write(GOOD_FRAME);
    setTimeout(() => res.end(GOOD_FRAME), 20);
  }
  return true;
}
