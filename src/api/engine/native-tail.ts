// generate_relay "native" (the default): the rest of a raw Generate leg's body, once the raw
// relay (raw-relay.ts) passed the first decode frames on in JavaScript (early head, failover,
// deadline are decided by then), goes to the client through the runtime's own pipe, the SSE
// native relay's pattern (api/native-relay.ts): the body is tee()'d, one branch piped into the
// client's body (an IdentityTransformStream, left open: preventClose, preventAbort), the other
// read behind it by the relay's FrameWatch, for timing, usage and the end-of-stream frame. The
// client speaks the engine's protocol, so the engine's end-of-stream frame goes out as the
// engine wrote it, an engine's error end included. Once the pipe settles, a body that broke
// off or ended without that frame gets the gateway's error end (end-frames.ts, naming the
// engine), unless the watch stopped inside a frame: an end frame there would be read as that
// frame's rest, so the body is closed and the client's decoder fails on the cut frame (an
// error too, never a clean end).
//
// The client leaving (request.signal through the pipeline) is first checked against the copy
// (the leg's watchBehind: the copy hurried, up to CATCH_UP_MS): a client closes on the end
// frame, which may have reached it before the copy read it, and an engine that had ended gets
// no Abort. Then the leg's signal stops the pipe and the copy (so the engine's body is
// cancelled), and the leg ends with the engine's end if the copy saw it, else as cancelled
// (with its Abort). With no signal, the leaving shows as the pipe failing once the runtime
// cancelled the client's body while the copy reads on.
import type { EnvelopeScanner } from "../../core/envelope.js";
import { WatchedCopy } from "../../core/watched-copy.js";
import type { LegFailure } from "../../core/leg-transport.js";
import type { RawLeg } from "../../pd/leg.js";
import type { FrameWatch } from "./frame-watch.js";

/** What the tail needs of the relay it continues: its state and how it ends. */
export interface TailHost {
  readonly leg: RawLeg;
  readonly scanner: EnvelopeScanner;
  readonly watch: FrameWatch;
  /** Settled already (the client left, or a watched frame failed the leg). */
  readonly over: boolean;
  /** The client went away (its own signal, or the leg's stop). */
  readonly clientGone: boolean;
  cancel(): void;
  /** The engine's end-of-stream payload passed to the client: completed, or its error. */
  endedWith(payload: Uint8Array): void;
  fail(f: LegFailure): void;
  /** The gateway's end frame the client still needs (a failure's), once. */
  takeFinal(): Uint8Array | undefined;
}

export class NativeTail {
  /** `held`: the first bytes of a frame the relay held back (whole frames only, in JS). */
  constructor(
    private readonly host: TailHost,
    private readonly held: Uint8Array,
  ) {}

  /** Pipes the rest into the client's body and ends it; resolves once it is ended. */
  async run(client: WritableStream<Uint8Array>): Promise<void> {
    const { leg } = this.host;
    if (this.host.over || leg.signal.aborted) {
      leg.body.cancel().catch(() => undefined);
      this.host.cancel();
      return this.close(client);
    }
    const [branch, copy] = WatchedCopy.tee(leg.body, (bytes) => this.see(bytes));
    // A client that leaves is checked against the copy first (the leg machine's rule): a
    // client closes on the end frame, which may have gone out before the copy read it, and
    // an engine that ended gets no Abort. Then the leg's signal stops the pipe.
    leg.watchBehind?.(async () => {
      await copy.caughtUpNow();
      return this.host.watch.endPayload !== undefined;
    });
    leg.signal.addEventListener("abort", copy.hurry, { once: true });
    const pipeFailed = await this.pipe(branch, client);
    leg.signal.removeEventListener("abort", copy.hurry);
    // Stopped: a broken engine body breaks the copy too, once it read what queued; a client
    // that left leaves the copy reading an engine that goes on, so it is stopped then.
    if (pipeFailed) {
      await copy.settled();
      if (leg.signal.aborted || !copy.broke) copy.stop();
    }
    await copy.rest();
    this.settle(pipeFailed, copy.broke);
    const final = this.host.takeFinal();
    // Behind a frame cut short the client would read an end frame as that frame's rest (and
    // wait for more): closing the body fails its decoder at once instead.
    if (final && !this.host.clientGone && this.host.scanner.atBoundary) await this.write(client, final);
    return this.close(client);
  }


  /** True when the pipe stopped short (the client left, or the engine's body broke). */
  private async pipe(branch: ReadableStream<Uint8Array>, client: WritableStream<Uint8Array>): Promise<boolean> {
    if (this.held.length > 0 && !(await this.write(client, this.held))) {
      branch.cancel().catch(() => undefined);
      return true;
    }
    try {
      await branch.pipeTo(client, { preventClose: true, preventAbort: true, signal: this.host.leg.signal });
      return false;
    } catch {
      return true;
    }
  }

  /** How the relay ended, once the pipe and the watch are done (`broke`: the copy's). */
  private settle(pipeFailed: boolean, broke: { err: unknown } | undefined): void {
    const { host } = this;
    if (host.over) return;
    // The engine's end frame decides once the watch saw it (it went to the client: no gateway
    // end after it), even if the client then closed before the pipe saw the body's end (a
    // client closes on the end frame) or the body broke after it.
    const end = host.watch.endPayload;
    if (end) {
      host.endedWith(end);
      host.takeFinal();
      return;
    }
    // The client left (its own signal counts: while the leg checks the copy behind the client
    // its signal has not fired yet): its leaving ended the engine's body too (the fetch aborted).
    if (host.clientGone) return host.cancel();
    if (broke) return host.fail(host.leg.failure("read", broke.err));
    if (pipeFailed) return host.cancel(); // not the engine's body: the client's went
    host.fail(host.leg.failure(host.scanner.atBoundary ? "missing-end" : "incomplete"));
  }

  /** A batch of the copy behind the client; a compressed or oversized frame fails the leg
   *  (which cuts the engine's body at its source, so the pipe stops too). */
  private see(bytes: Uint8Array): boolean {
    const { host } = this;
    host.scanner.push(bytes);
    if (!host.over && host.watch.oversized) host.fail(host.leg.failure("oversized"));
    else if (!host.over && host.watch.compressed) host.fail(host.leg.failure("compressed"));
    return true;
  }

  private async write(client: WritableStream<Uint8Array>, bytes: Uint8Array): Promise<boolean> {
    const writer = client.getWriter();
    try {
      await writer.write(bytes);
      return true;
    } catch {
      return false;
    } finally {
      writer.releaseLock();
    }
  }

  private close(client: WritableStream<Uint8Array>): Promise<void> {
    return client.close().catch(() => undefined);
  }
}
