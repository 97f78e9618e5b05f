// TokenizerBundles with fake engines: one load per isolate shared by concurrent requests, the
// cross-isolate store (and distrust of it), engines that disagree, failures that are clear
// 502s naming the engine, remembered briefly, and never a hang.
import { create } from "@bufbuild/protobuf";
import { strToU8, unzipSync, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { TokenizerBundles, type TokenizerRequest } from "../../../src/backends/tokenizer-bundles.js";
import type { BundlePointer, BundleStore } from "../../../src/backends/tokenizer-store.js";
import type { VllmEngineClient } from "../../../src/backends/vllm-engine.js";
import type { EngineConfig } from "../../../src/config/schema.js";
import { GatewayError } from "../../../src/core/errors.js";
import { GetTokenizerChunkSchema, type GetTokenizerChunk } from "../../../src/gen/common_pb.js";
import { sha256Hex } from "../../../src/tokenizer/bundle.js";
import { qwen3BundleZip, tokenizerChunks } from "../../../sim/tokenizer-bundle.js";

type Behaviour = "good" | "bad-sha" | "other-bundle" | "unimplemented" | "hang";

function engine(name: string): EngineConfig {
  return { name, url: `http://${name}.test`, transport: "connect", labels: {} };
}

/** A second valid bundle: the same tokenizer.json in another ZIP (so another sha256). */
const otherZip = zipSync({ "tokenizer.json": unzipSync(qwen3BundleZip().zip, { filter: (f) => f.name === "tokenizer.json" })["tokenizer.json"]!, "extra.txt": strToU8("x") }, { level: 1 });

async function* chunksOf(zip: Uint8Array): AsyncGenerator<GetTokenizerChunk> {
  yield create(GetTokenizerChunkSchema, { data: zip, sha256: await sha256Hex(zip) });
}

function fakeEngines(behaviour: Record<string, Behaviour>) {
  const calls: Record<string, number> = {};
  const clientOf = (e: EngineConfig) =>
    ({
      getTokenizer(_req: unknown, opts: { signal: AbortSignal }) {
        calls[e.name] = (calls[e.name] ?? 0) + 1;
        switch (behaviour[e.name]) {
          case "good":
            return tokenizerChunks(false);
          case "bad-sha":
            return tokenizerChunks(true);
          case "other-bundle":
            return chunksOf(otherZip);
          case "hang":
            return (async function* () {
              await new Promise((_r, reject) => opts.signal.addEventListener("abort", () => reject(new Error("aborted"))));
            })();
          default:
            return (async function* () {
              throw new Error("[unimplemented] GetTokenizer is not implemented");
            })();
        }
      },
      getModelInfo: async () => ({ maxContextLength: 40_960 }),
    }) as unknown as VllmEngineClient;
  return { clientOf, calls };
}

function memoryStore(): BundleStore & { zips: Map<string, Uint8Array> } {
  const pointers = new Map<string, BundlePointer>();
  const zips = new Map<string, Uint8Array>();
  return {
    zips,
    pointer: async (m) => pointers.get(m),
    setPointer: async (m, p) => void pointers.set(m, p),
    zip: async (m, sha) => zips.get(`${m}/${sha}`),
    setZip: async (m, sha, z) => void zips.set(`${m}/${sha}`, z),
  };
}

/** A store that keeps fast forms too (by sha256), with its maps open to the test. */
function fastStore() {
  const fasts = new Map<string, Uint8Array>();
  const pointers = new Map<string, BundlePointer>();
  const base = memoryStore();
  return {
    ...base,
    fasts,
    pointers,
    pointer: async (m: string) => pointers.get(m),
    setPointer: async (m: string, p: BundlePointer) => void pointers.set(m, p),
    fastForm: async (sha: string) => fasts.get(sha),
    setFastForm: async (sha: string, b: Uint8Array) => void fasts.set(sha, b),
  };
}

function request(names: string[], pending: Promise<unknown>[] = []): TokenizerRequest {
  return { model: "qwen3", engines: names.map(engine), waitUntil: (p) => void pending.push(p) };
}

const failure = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as GatewayError);

describe("TokenizerBundles", () => {
  it("concurrent requests share one GetTokenizer; the context length comes with it", async () => {
    const { clientOf, calls } = fakeEngines({ a: "good" });
    const bundles = new TokenizerBundles({ clientOf, store: () => memoryStore() });
    const got = await Promise.all([1, 2, 3].map(() => bundles.get(request(["a"]))));
    expect(calls.a).toBe(1);
    expect(new Set(got.map((t) => t.tokenizer)).size).toBe(1);
    expect(got[0]).toMatchObject({ source: "a", sha256: qwen3BundleZip().sha256, maxContextLength: 40_960 });
    expect(got[0]!.tokenizer.encode("hello", { addSpecialTokens: false }).length).toBeGreaterThan(0);
  });

  it("a fresh isolate reads the shared store (no GetTokenizer), and re-hashes what it reads", async () => {
    const store = memoryStore();
    const pending: Promise<unknown>[] = [];
    const first = fakeEngines({ a: "good" });
    await new TokenizerBundles({ clientOf: first.clientOf, store: () => store }).get(request(["a"], pending));
    await Promise.all(pending);
    const cold = fakeEngines({ a: "good" });
    const t = await new TokenizerBundles({ clientOf: cold.clientOf, store: () => store }).get(request(["a"]));
    expect(cold.calls.a).toBeUndefined();
    expect(t).toMatchObject({ source: "cache", maxContextLength: 40_960 });
    // A corrupted cache entry is not trusted: the engine is asked again.
    for (const [k, z] of store.zips) store.zips.set(k, z.slice(0, z.length - 1));
    const again = fakeEngines({ a: "good" });
    expect((await new TokenizerBundles({ clientOf: again.clientOf, store: () => store }).get(request(["a"]))).source).toBe("a");
    expect(again.calls.a).toBe(1);
  });

  it("a wrong sha256 is a 502 naming the engine, remembered for a few seconds, then retried", async () => {
    let now = 1_000;
    const { clientOf, calls } = fakeEngines({ a: "bad-sha", b: "good" });
    const bundles = new TokenizerBundles({ clientOf, store: () => memoryStore(), now: () => now });
    const e = await failure(bundles.get(request(["a", "b"])));
    expect(e).toBeInstanceOf(GatewayError);
    expect(e).toMatchObject({ status: 502, code: "tokenizer_unavailable" });
    expect(e!.message).toMatch(/^Engine 'a' gave no usable tokenizer for model 'qwen3': tokenizer bundle: sha256 mismatch/);
    expect(calls.b).toBeUndefined(); // an untrustworthy bundle is not papered over by another engine
    await failure(bundles.get(request(["a", "b"])));
    expect(calls.a).toBe(1);
    now += 5_000;
    await failure(bundles.get(request(["a", "b"])));
    expect(calls.a).toBe(2);
  });

  it("an engine without GetTokenizer leaves the next one to try; all failing names the last and hints at the override", async () => {
    const { clientOf } = fakeEngines({ a: "unimplemented", b: "good" });
    expect((await new TokenizerBundles({ clientOf, store: () => memoryStore() }).get(request(["a", "b"]))).source).toBe("b");
    const none = fakeEngines({ a: "unimplemented" });
    const e = await failure(new TokenizerBundles({ clientOf: none.clientOf, store: () => memoryStore() }).get(request(["a"])));
    expect(e!.message).toMatch(/^Engine 'a' gave no usable tokenizer.*models\.qwen3\.tokenizer\.url/);
  });

  it("never hangs: a silent engine is a 502 within the load timeout", async () => {
    const { clientOf } = fakeEngines({ a: "hang" });
    const bundles = new TokenizerBundles({ clientOf, store: () => memoryStore(), loadTimeoutMs: 200, idleTimeoutMs: 150 });
    const t0 = Date.now();
    const e = await failure(bundles.get(request(["a"])));
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(e).toMatchObject({ status: 502, code: "tokenizer_unavailable" });
    expect(e!.message).toMatch(/Engine 'a'.*tokenizer bundle: (no chunk for 150 ms|no complete bundle within 200 ms)/);
  });

  it("engines of one model that serve different bundles are reported (config error)", async () => {
    const { clientOf } = fakeEngines({ a: "good", b: "other-bundle" });
    const bundles = new TokenizerBundles({ clientOf, store: () => memoryStore() });
    const pending: Promise<unknown>[] = [];
    await bundles.get(request(["a", "b"], pending));
    await Promise.all(pending);
    const [conflict] = bundles.conflicts();
    expect(conflict!.model).toBe("qwen3");
    expect(conflict!.engines.map((e) => e.engine)).toEqual(["a", "b"]);
    expect(conflict!.engines[0]!.sha256).not.toBe(conflict!.engines[1]!.sha256);
  });

  it("models.<m>.tokenizer.url: fetched, checked against its sha256, 502 naming the URL on a mismatch", async () => {
    const { zip, sha256 } = qwen3BundleZip();
    const { clientOf } = fakeEngines({ a: "unimplemented" });
    let fetches = 0;
    const fetchZip = async () => {
      fetches++;
      return zip;
    };
    const store = memoryStore();
    const pending: Promise<unknown>[] = [];
    const bundles = new TokenizerBundles({ clientOf, store: () => store, fetchZip });
    const t = await bundles.get({ ...request(["a"], pending), override: { url: "https://models.test/qwen3.zip", sha256 } });
    expect(t).toMatchObject({ source: "https://models.test/qwen3.zip", sha256, maxContextLength: 40_960 });
    await Promise.all(pending);
    // A fresh isolate finds it by the configured sha256 without fetching.
    await new TokenizerBundles({ clientOf, store: () => store, fetchZip }).get({ ...request(["a"]), override: { url: "https://models.test/qwen3.zip", sha256 } });
    expect(fetches).toBe(1);
    const wrong = "0".repeat(64);
    const e = await failure(new TokenizerBundles({ clientOf, store: () => memoryStore(), fetchZip }).get({ ...request(["a"]), override: { url: "https://models.test/qwen3.zip", sha256: wrong } }));
    expect(e!.message).toMatch(/^Tokenizer URL https:\/\/models\.test\/qwen3\.zip gave no usable tokenizer for model 'qwen3': tokenizer bundle: sha256 mismatch/);
  });

  it("the isolate that parses a ZIP stores its fast form; cold isolates load it without the ZIP; a new bundle sha256 or a bad entry is rebuilt", async () => {
    const store = fastStore();
    const pending: Promise<unknown>[] = [];
    const first = await new TokenizerBundles({ clientOf: fakeEngines({ a: "good" }).clientOf, store: () => store }).get(request(["a"], pending));
    await Promise.all(pending);
    const sha = qwen3BundleZip().sha256;
    expect([...store.fasts.keys()]).toEqual([sha]);
    const zips = new Map(store.zips);
    store.zips.clear(); // only the fast form is left to load from
    const cold = fakeEngines({ a: "good" });
    const t = await new TokenizerBundles({ clientOf: cold.clientOf, store: () => store }).get(request(["a"]));
    expect(cold.calls.a).toBeUndefined();
    expect(t).toMatchObject({ source: "cache", sha256: sha, maxContextLength: 40_960 });
    const text = "Hello, world! 你好 😀 <|im_start|>user\nhi<|im_end|>";
    expect(t.tokenizer.encode(text)).toEqual(first.tokenizer.encode(text));
    // The chat template comes from the fast form's copy of tokenizer_config.json.
    await expect(t.chatTemplate({ hasTools: false })).resolves.toBeDefined();

    // A damaged entry is a miss: the ZIP is parsed and the fast form written again.
    const good = store.fasts.get(sha)!;
    store.fasts.set(sha, good.subarray(0, 1000));
    for (const [k, z] of zips) store.zips.set(k, z);
    const rebuilt: Promise<unknown>[] = [];
    expect((await new TokenizerBundles({ clientOf: fakeEngines({ a: "good" }).clientOf, store: () => store }).get(request(["a"], rebuilt))).source).toBe("cache");
    await Promise.all(rebuilt);
    expect(store.fasts.get(sha)).toEqual(good);

    // The engines now serve another bundle (the pointer expired): its own fast form is built.
    store.pointers.clear();
    const next: Promise<unknown>[] = [];
    const other = await new TokenizerBundles({ clientOf: fakeEngines({ a: "other-bundle" }).clientOf, store: () => store }).get(request(["a"], next));
    await Promise.all(next);
    expect(other.sha256).not.toBe(sha);
    expect([...store.fasts.keys()].sort()).toEqual([sha, other.sha256].sort());
    const coldOther = fakeEngines({ a: "good" });
    expect(await new TokenizerBundles({ clientOf: coldOther.clientOf, store: () => store }).get(request(["a"]))).toMatchObject({ source: "cache", sha256: other.sha256 });
    expect(coldOther.calls.a).toBeUndefined();
  });
});
