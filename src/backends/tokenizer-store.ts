// Tokenizer bundles shared across isolates, in the Cache API (caches.default): the ZIP bytes
// under a synthetic URL per model and sha256 (content-addressed, so never stale), its fast
// form (what a cold isolate loads instead of parsing the ZIP: issue 30), and a short-
// lived pointer per model to the sha256 its engines serve (GetTokenizer sends the sha256 only
// on its last chunk, so without the pointer a cold isolate would have to stream the whole
// bundle to learn which key to read). Why the Cache API and not KV or R2: docs/tokenizer.md.
// The cache is an optimisation: every failure here is logged and read as a miss.
import { FAST_FORM_VERSION } from "../tokenizer/fast-form.js";

/** What a cold isolate needs to skip GetTokenizer and GetModelInfo. */
export interface BundlePointer {
  sha256: string;
  /** GetModelInfo max_context_length, when the engine reported one. */
  maxContextLength?: number;
}

export interface BundleStore {
  pointer(model: string): Promise<BundlePointer | undefined>;
  setPointer(model: string, pointer: BundlePointer): Promise<void>;
  zip(model: string, sha256: string): Promise<Uint8Array | undefined>;
  setZip(model: string, sha256: string, zip: Uint8Array): Promise<void>;
  /** The bundle's fast form (tokenizer/fast-form.ts) of this format version; a store without
   *  these methods keeps none, and every cold isolate parses the ZIP. */
  fastForm?(sha256: string): Promise<Uint8Array | undefined>;
  setFastForm?(sha256: string, bytes: Uint8Array): Promise<void>;
}

const ORIGIN = "https://tokenizer-bundles.vllm-edge-gateway.internal/v1";
/** How long a cold isolate trusts another isolate's word on which bundle a model's engines
 *  serve: a redeployed model with a new tokenizer is picked up within this. */
export const POINTER_TTL_SECS = 300;
/** The ZIP under its own sha256 cannot go stale; the TTL only bounds its footprint. */
const ZIP_TTL_SECS = 7 * 24 * 3600;

const zipUrl = (model: string, sha256: string) => `${ORIGIN}/${encodeURIComponent(model)}/${sha256}.zip`;
// Keyed by the bundle's sha256 and the fast form's format version: a new bundle or a new
// layout is a miss, and the isolate that parses the ZIP writes the new entry.
const fastFormUrl = (sha256: string) => `${ORIGIN}/fast-form/v${FAST_FORM_VERSION}/${sha256}.bin`;
const pointerUrl = (model: string) => `${ORIGIN}/${encodeURIComponent(model)}/current.json`;

function warn(op: string, err: unknown): undefined {
  console.warn(JSON.stringify({ msg: "tokenizer bundle cache failed; treated as a miss", op, error: String(err) }));
  return undefined;
}

export function cacheApiStore(cache: Cache): BundleStore {
  const put = (url: string, body: BodyInit, ttl: number, type: string) =>
    cache.put(url, new Response(body, { headers: { "content-type": type, "cache-control": `public, max-age=${ttl}` } })).catch((e: unknown) => warn("put", e));
  return {
    async pointer(model) {
      try {
        const res = await cache.match(pointerUrl(model));
        if (!res) return undefined;
        const p = (await res.json()) as Partial<BundlePointer>;
        if (typeof p.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(p.sha256)) return undefined;
        return { sha256: p.sha256, ...(typeof p.maxContextLength === "number" ? { maxContextLength: p.maxContextLength } : {}) };
      } catch (err) {
        return warn("pointer", err);
      }
    },
    async setPointer(model, pointer) {
      await put(pointerUrl(model), JSON.stringify(pointer), POINTER_TTL_SECS, "application/json");
    },
    async zip(model, sha256) {
      try {
        const res = await cache.match(zipUrl(model, sha256));
        return res ? new Uint8Array(await res.arrayBuffer()) : undefined;
      } catch (err) {
        return warn("zip", err);
      }
    },
    async setZip(model, sha256, zip) {
      await put(zipUrl(model, sha256), zip, ZIP_TTL_SECS, "application/zip");
    },
    async fastForm(sha256) {
      try {
        const res = await cache.match(fastFormUrl(sha256));
        return res ? new Uint8Array(await res.arrayBuffer()) : undefined;
      } catch (err) {
        return warn("fastForm", err);
      }
    },
    async setFastForm(sha256, bytes) {
      await put(fastFormUrl(sha256), bytes, ZIP_TTL_SECS, "application/octet-stream");
    },
  };
}

/** No cross-isolate cache (Node: benches, unit tests). */
export const noBundleStore: BundleStore = {
  pointer: async () => undefined,
  setPointer: async () => {},
  zip: async () => undefined,
  setZip: async () => {},
  fastForm: async () => undefined,
  setFastForm: async () => {},
};

/** caches.default inside workerd, else nothing. */
export function defaultBundleStore(): BundleStore {
  const storage = (globalThis as { caches?: CacheStorage & { default?: Cache } }).caches;
  return storage?.default ? cacheApiStore(storage.default) : noBundleStore;
}
