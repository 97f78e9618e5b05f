// How a Generate handler hands a leg's raw body to the response the router already sent
// (early-head.ts): the router makes one per eligible call (binary, uncompressed, no
// deadline: raw-eligible.ts) and puts it in the Connect context values; the handler gives it
// the relay when its leg could hand its body over; the response pulls the client's bytes
// from it.
import { createContextKey } from "@connectrpc/connect";
import type { RawRelay } from "./raw-relay.js";

type RawJob = Pick<RawRelay, "next" | "cancel" | "tail">;

export class RawHandover {
  readonly taken: Promise<RawJob>;
  private take!: (job: RawJob) => void;
  private closed = false;
  /** Set by the handler before the head goes out (the model's generate_relay is "native"):
   *  the response body is then a native pipe the relay's tail can be piped into. */
  nativeTail = false;

  constructor(readonly protocol: "connect" | "grpc-web") {
    this.taken = new Promise((r) => (this.take = r));
  }

  /** False when the response no longer takes a job (the client left, or it was answered). */
  give(job: RawJob): boolean {
    if (this.closed) return false;
    this.closed = true;
    this.take(job);
    return true;
  }

  close(): void {
    this.closed = true;
  }
}

export const rawHandoverKey = createContextKey<RawHandover | undefined>(undefined, { description: "raw Generate relay" });
