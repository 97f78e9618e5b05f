// The tokenizer's fast form across isolates, in workerd with its own caches.default (issue 30):
// the isolate that fetched the bundle from the engine stores its fast form; a cold isolate (a
// fresh TokenizerBundles: nothing parsed, nothing fetched) then loads the tokenizer from the
// fast form alone, with no GetTokenizer and no read of the ZIP, and encodes to the same ids.
// When the model's bundle changes (another sha256 behind the pointer), the cold isolate misses
// the fast form, parses the new ZIP and stores that bundle's fast form, which the next cold
// isolate loads; the new bundle's files are the ones in use.
import { strToU8, unzipSync, zipSync } from "fflate";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TokenizerBundles } from "../../src/backends/tokenizer-bundles.js";
import { cacheApiStore, type BundleStore } from "../../src/backends/tokenizer-store.js";
import { EngineClients } from "../../src/backends/engine-clients.js";
import { loadVllmEngineClient } from "../../src/backends/vllm-engine.js";
import type { EngineConfig } from "../../src/config/schema.js";
import { sha256Hex } from "../../src/tokenizer/bundle.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";

const MODEL = "Qwen/Qwen3-0.6B-fast-form-cache";
const PROMPT = "<|im_start|>user\nhello edge, 你好 😀<|im_end|>\n<|im_start|>assistant\n";
let cluster: TestCluster;
let engine: EngineConfig;

beforeAll(async () => {
  cluster = await startTestCluster({ engines: [{ name: "q", role: "both", kvConnector: "none", model: MODEL, port: 0, latency: { perPromptTokenMs: 0, perOutputTokenMs: 0, perBlockPullMs: 0 } }] });
  engine = { name: "q", url: cluster.url("q"), transport: "connect", labels: {} };
}, 30_000);
afterAll(() => cluster?.close());
// The real client, not the stand-in a not-yet-loaded module gives (engine-clients.ts).
beforeAll(() => loadVllmEngineClient().then(() => undefined));

/** A cold isolate: its own TokenizerBundles over caches.default, counting what it asks for. */
function coldIsolate() {
  const seen = { getTokenizer: 0, zipReads: 0, fastFormReads: 0 };
  const store = (): BundleStore => {
    const s = cacheApiStore(caches.default);
    return { ...s, zip: (m, sha) => (seen.zipReads++, s.zip(m, sha)), fastForm: (sha) => (seen.fastFormReads++, s.fastForm!(sha)) };
  };
  const engines = new EngineClients();
  const clientOf = (e: EngineConfig) => {
    const c = engines.vllmEngine(e);
    return { ...c, getTokenizer: ((...a: Parameters<typeof c.getTokenizer>) => (seen.getTokenizer++, c.getTokenizer(...a))) as typeof c.getTokenizer };
  };
  const bundles = new TokenizerBundles({ clientOf, store });
  const pending: Promise<unknown>[] = [];
  const load = async () => {
    const t = await bundles.get({ model: MODEL, engines: [engine], waitUntil: (p) => void pending.push(p) });
    await Promise.all(pending); // the cache writes, as waitUntil would finish them
    return t;
  };
  return { seen, load };
}

it("a cold isolate loads the fast form another stored; a new bundle sha256 is rebuilt and stored", async () => {
  const first = coldIsolate();
  const a = await first.load();
  expect(a.source).toBe("q");
  expect(first.seen.getTokenizer).toBeGreaterThanOrEqual(1);
  const ids = a.tokenizer.encode(PROMPT, { addSpecialTokens: false });
  expect(ids.length).toBeGreaterThan(10);
  const store = cacheApiStore(caches.default);
  expect(await store.fastForm!(a.sha256)).toBeInstanceOf(Uint8Array);

  const cold = coldIsolate();
  const b = await cold.load();
  expect(b).toMatchObject({ source: "cache", sha256: a.sha256 });
  expect(cold.seen).toEqual({ getTokenizer: 0, zipReads: 0, fastFormReads: 1 });
  expect(b.tokenizer.encode(PROMPT, { addSpecialTokens: false })).toEqual(ids);
  expect(b.tokenizer.eosTokenIds).toEqual([151645, 151643]);

  // The engines now serve another bundle: the same files but generation_config.json.
  const files = unzipSync((await store.zip(MODEL, a.sha256))!);
  files["generation_config.json"] = strToU8(JSON.stringify({ eos_token_id: [151643] }));
  const zip = zipSync(files, { level: 6 });
  const sha256 = await sha256Hex(zip);
  await store.setZip(MODEL, sha256, zip);
  await store.setPointer(MODEL, { sha256 });
  expect(await store.fastForm!(sha256)).toBeUndefined();

  const rebuilt = coldIsolate();
  const c = await rebuilt.load();
  expect(c).toMatchObject({ source: "cache", sha256 });
  expect(rebuilt.seen).toEqual({ getTokenizer: 0, zipReads: 1, fastFormReads: 1 });
  expect(c.tokenizer.eosTokenIds).toEqual([151643, 151645]);
  expect(await store.fastForm!(sha256)).toBeInstanceOf(Uint8Array);

  const next = coldIsolate();
  const d = await next.load();
  expect(next.seen).toEqual({ getTokenizer: 0, zipReads: 0, fastFormReads: 1 });
  expect(d.tokenizer.eosTokenIds).toEqual([151643, 151645]);
  expect(d.tokenizer.encode(PROMPT, { addSpecialTokens: false })).toEqual(ids);
}, 120_000);
