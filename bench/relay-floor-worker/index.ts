// The runtime's floor for a relay that runs JavaScript per chunk: the pass-through Worker's one
// fetch, with the engine's body relayed in the shape named by the `x-relay-shape` header and
// nothing else done per chunk (no scan, no parse). The gateway's relays cannot cost less than
// the shape they use, so bench/ reports the gateway's per-chunk ratios next to these.
//   loop  a reader loop writing each chunk into an IdentityTransformStream (api/openai/relay.ts)
//   pull  a JS ReadableStream the runtime pulls, one engine read per pull (api/engine/early-head.ts)
//   tee   tee(): one branch to the client untouched, the other read in JS (watches, cannot rewrite)
//   teepipe  the native relays' shape (api/native-relay.ts): tee(), one branch piped into an
//         IdentityTransformStream left open (preventClose, preventAbort), the other read in
//         batches (what queued every 50 ms, one BYOB read)
//   pipe  no copy: the body piped into an IdentityTransformStream left open (the pump alone)
// Without the header (or with "native") the engine's response is returned as is.
interface FloorEnv {
  UPSTREAM: string;
}

type Shape = (body: ReadableStream<Uint8Array>, ctx: ExecutionContext) => ReadableStream<Uint8Array>;

const loop: Shape = (body, ctx) => {
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  const reader = body.getReader();
  const run = async () => {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      await writer.write(r.value);
    }
    await writer.close();
  };
  ctx.waitUntil(run().catch(() => reader.cancel().catch(() => undefined)));
  return pipe.readable as ReadableStream<Uint8Array>;
};

const pull: Shape = (body) => {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      const r = await reader.read();
      if (r.done) c.close();
      else c.enqueue(r.value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
};

const tee: Shape = (body, ctx) => {
  const [client, watched] = body.tee();
  const reader = watched.getReader();
  const run = async () => {
    let bytes = 0;
    for (;;) {
      const r = await reader.read();
      if (r.done) return bytes;
      bytes += r.value.byteLength;
    }
  };
  ctx.waitUntil(run().catch(() => 0));
  return client;
};

const leftOpen = (source: ReadableStream<Uint8Array>, ctx: ExecutionContext): ReadableStream<Uint8Array> => {
  const pipe = new IdentityTransformStream();
  ctx.waitUntil(source.pipeTo(pipe.writable, { preventClose: true, preventAbort: true }).then(() => pipe.writable.close()).catch(() => undefined));
  return pipe.readable as ReadableStream<Uint8Array>;
};

const teepipe: Shape = (body, ctx) => {
  const [client, watched] = body.tee();
  const reader = watched.getReader({ mode: "byob" });
  const run = async () => {
    let bytes = 0;
    let buffer = new Uint8Array(64 * 1024);
    for (;;) {
      await new Promise((r) => setTimeout(r, 50));
      const r = await reader.read(buffer);
      if (r.done || !r.value) return bytes;
      bytes += r.value.byteLength;
      buffer = new Uint8Array(r.value.buffer);
    }
  };
  ctx.waitUntil(run().catch(() => 0));
  return leftOpen(client, ctx);
};

const pipe: Shape = (body, ctx) => leftOpen(body, ctx);



const SHAPES: Record<string, Shape> = { loop, pull, tee, teepipe, pipe };

export default {
  async fetch(request: Request, env: FloorEnv, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    const shape = SHAPES[request.headers.get("x-relay-shape") ?? ""];
    const res = await fetch(`${env.UPSTREAM}${url.pathname}${url.search}`, request);
    if (!shape || !res.body) return res;
    return new Response(shape(res.body, ctx), res);
  },
};
