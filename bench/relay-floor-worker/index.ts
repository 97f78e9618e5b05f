// The runtime's floor for a relay that runs JavaScript per chunk: the pass-through Worker's one
// fetch, with the engine's body relayed in the shape named by the `x-relay-shape` header and
// nothing else done per chunk (no scan, no parse). The gateway's relays cannot cost less than
// the shape they use, so bench/ reports the gateway's per-chunk ratios next to these.
//   loop  a reader loop writing each chunk into an IdentityTransformStream (api/openai/relay.ts)
//   pull  a JS ReadableStream the runtime pulls, one engine read per pull (api/engine/early-head.ts)
//   tee   tee(): one branch to the client untouched, the other read in JS (watches, cannot rewrite)
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

const SHAPES: Record<string, Shape> = { loop, pull, tee };

export default {
  async fetch(request: Request, env: FloorEnv, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    const shape = SHAPES[request.headers.get("x-relay-shape") ?? ""];
    const res = await fetch(`${env.UPSTREAM}${url.pathname}${url.search}`, request);
    if (!shape || !res.body) return res;
    return new Response(shape(res.body, ctx), res);
  },
};
