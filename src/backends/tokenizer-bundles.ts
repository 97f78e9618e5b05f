// A model's tokenizer for the OpenAI surface over VllmEngine engines (ARCHITECTURE decision
// 12): fetched with GetTokenizer (or from the config's tokenizer.url), verified by sha256,
// parsed once per isolate per sha256, and shared across isolates through a BundleStore so a
// cold isolate does not stream the bundle again. Concurrent requests share one load. The
// model's max_context_length (GetModelInfo) is kept with it.
//
// Failures are 502 `tokenizer_unavailable` naming the engine (or URL) and never hang: every
// load is bounded by LOAD_TIMEOUT_MS. A failed load is remembered for RETRY_AFTER_FAILURE_MS so
// a broken engine is not asked again by every request.
import type { EngineConfig, TokenizerSource } from "../config/schema.js";
import { errorText, GatewayError } from "../core/errors.js";
import { bundleFromZip, sha256Hex, unpackVerifiedZip, verifiedZipFromChunks, type TokenizerBundle } from "../tokenizer/bundle.js";
import { compileChatTemplate, preloadChatTemplates, type CompiledChatTemplate } from "../tokenizer/chat-template.js";
import { TokenizerBundleError } from "../tokenizer/errors.js";
import { selectChatTemplate, type TemplateChoice } from "../tokenizer/template-source.js";
import { decodeFastForm, encodeFastForm } from "../tokenizer/fast-form.js";
import { loadTokenizerAndFastForm, loadTokenizerFromFastForm, preloadTokenizer, type EdgeTokenizer } from "../tokenizer/tokenizer.js";
import { defaultBundleStore, type BundleStore } from "./tokenizer-store.js";
import type { VllmEngineClient } from "./vllm-engine.js";

export const LOAD_TIMEOUT_MS = 20_000;
const IDLE_TIMEOUT_MS = 10_000;
const MODEL_INFO_TIMEOUT_MS = 5_000;
const RETRY_AFTER_FAILURE_MS = 5_000;
/** tokenizer.json stays bytes: the loader decodes only what it needs (bpe-scan.ts). */
const RAW = { rawTokenizerJson: true } as const;

export interface ModelTokenizer {
  model: string;
  sha256: string;
  /** Where this isolate got it: an engine name, the override URL, or "cache". */
  source: string;
  tokenizer: EdgeTokenizer;
  /** GetModelInfo max_context_length; undefined when no engine reported it. */
  maxContextLength: number | undefined;
  /** The bundle's config.json model_type (GetModelInfo's model_type comes from the same
   *  file), for choosing output parsers; undefined when the bundle has none. */
  modelType: string | undefined;
  /** The chat template for a request, parsed once per template text. */
  chatTemplate(choice: TemplateChoice): Promise<CompiledChatTemplate>;
}

export interface TokenizerRequest {
  model: string;
  /** The model's VllmEngine engines, in the order to ask them. */
  engines: readonly EngineConfig[];
  override?: TokenizerSource;
  waitUntil(promise: Promise<unknown>): void;
}

/** Engines of one model that serve different bundles: a config error. */
export interface BundleConflict {
  model: string;
  engines: { engine: string; sha256: string }[];
}

export interface TokenizerBundleDeps {
  clientOf(engine: EngineConfig): VllmEngineClient;
  store?: () => BundleStore;
  fetchZip?: (url: string, signal: AbortSignal) => Promise<Uint8Array>;
  now?: () => number;
  /** Test seams; LOAD_TIMEOUT_MS and IDLE_TIMEOUT_MS otherwise. */
  loadTimeoutMs?: number;
  idleTimeoutMs?: number;
}

interface Parsed {
  tokenizer: EdgeTokenizer;
  /** The bundle's files but tokenizer.json (chat templates are read from them). */
  files: ReadonlyMap<string, string>;
  templates: Map<string, Promise<CompiledChatTemplate>>;
}

export class TokenizerBundles {
  private readonly models = new Map<string, { at: number; failed: boolean; value: Promise<ModelTokenizer> }>();
  private readonly parsed = new Map<string, Promise<Parsed>>();
  /** What each engine served, per model: the evidence for conflicts(). */
  private readonly served = new Map<string, Map<string, string>>();
  private readonly swept = new Set<string>();
  /** config.json model_type per model, once this isolate has loaded its tokenizer. */
  private readonly types = new Map<string, string | undefined>();

  constructor(private readonly deps: TokenizerBundleDeps) {}

  /** The model's tokenizer; one load per isolate, shared by concurrent requests. */
  get(req: TokenizerRequest): Promise<ModelTokenizer> {
    const now = (this.deps.now ?? Date.now)();
    const key = `${req.model}\n${req.override?.url ?? ""}\n${req.override?.sha256 ?? ""}`;
    const hit = this.models.get(key);
    if (hit && !(hit.failed && now - hit.at >= RETRY_AFTER_FAILURE_MS)) return hit.value;
    const entry = { at: now, failed: false, value: this.load(req) };
    entry.value.then(
      (t) => this.types.set(req.model, t.modelType),
      () => {
        entry.failed = true;
        entry.at = (this.deps.now ?? Date.now)();
      },
    );
    this.models.set(key, entry);
    return entry.value;
  }

  /** The model's config.json model_type: null until this isolate has loaded its tokenizer. */
  modelType(model: string): string | undefined | null {
    return this.types.has(model) ? this.types.get(model) : null;
  }

  /** Models whose engines served different bundles (for the admin view). */
  conflicts(): BundleConflict[] {
    const out: BundleConflict[] = [];
    for (const [model, byEngine] of this.served) {
      if (new Set(byEngine.values()).size > 1) out.push({ model, engines: [...byEngine].map(([engine, sha256]) => ({ engine, sha256 })) });
    }
    return out;
  }

  private store(): BundleStore {
    return (this.deps.store ?? defaultBundleStore)();
  }

  private async load(req: TokenizerRequest): Promise<ModelTokenizer> {
    // The libraries load while the cache and the engine are asked (I/O waits).
    preloadTokenizer();
    preloadChatTemplates();
    if (req.override) return this.fromOverride(req, req.override);
    const store = this.store();
    const pointer = await store.pointer(req.model);
    if (pointer) {
      const fast = await this.fromFastForm(req.model, store, "cache", pointer.sha256, pointer.maxContextLength);
      if (fast) return fast;
      const zip = await store.zip(req.model, pointer.sha256);
      // A cached ZIP is hashed again: the cache is not trusted more than the engine.
      if (zip && (await sha256Hex(zip)) === pointer.sha256) {
        return this.fromZip(req, store, "cache", await unpackVerifiedZip(zip, pointer.sha256, RAW), pointer.maxContextLength);
      }
    }
    return this.fromEngines(req, store);
  }

  private async fromEngines(req: TokenizerRequest, store: BundleStore): Promise<ModelTokenizer> {
    if (req.engines.length === 0) throw new GatewayError("no_engine_available", 503, `No engine available for model '${req.model}'`);
    let lastFailure: GatewayError | undefined;
    for (const engine of req.engines) {
      const info = this.maxContextLength(engine);
      let fetched: { zip: Uint8Array; sha256: string };
      try {
        fetched = await this.fetchFromEngine(engine);
      } catch (err) {
        lastFailure = unavailable(`Engine '${engine.name}'`, err, req.model).from(engine.name);
        // A bundle that arrived but cannot be trusted is a hard failure; an engine that could
        // not be reached (or has no GetTokenizer) leaves the next engine to try.
        if (err instanceof TokenizerBundleError && err.kind !== "stream_failed" && err.kind !== "timeout") throw lastFailure;
        continue;
      }
      this.record(req.model, engine.name, fetched.sha256);
      const bundle = await unpackVerifiedZip(fetched.zip, fetched.sha256, RAW);
      const maxContextLength = await info;
      req.waitUntil(Promise.all([store.setZip(req.model, fetched.sha256, fetched.zip), store.setPointer(req.model, { sha256: fetched.sha256, ...(maxContextLength !== undefined ? { maxContextLength } : {}) })]));
      req.waitUntil(this.sweep(req.model, req.engines.filter((e) => e !== engine)));
      return this.fromZip(req, store, engine.name, bundle, maxContextLength);
    }
    throw lastFailure!;
  }

  private async fromOverride(req: TokenizerRequest, source: TokenizerSource): Promise<ModelTokenizer> {
    const store = this.store();
    const info = req.engines[0] ? this.maxContextLength(req.engines[0]) : Promise.resolve(undefined);
    let bundle: TokenizerBundle | undefined;
    if (source.sha256 !== undefined) {
      const fast = await this.fromFastForm(req.model, store, source.url, source.sha256.toLowerCase(), await info);
      if (fast) return fast;
      const zip = await store.zip(req.model, source.sha256);
      if (zip) bundle = await bundleFromZip(zip, { ...RAW, expectedSha256: source.sha256 }).catch(() => undefined);
    }
    if (!bundle) {
      try {
        const fetchZip = this.deps.fetchZip ?? fetchZipFromUrl;
        const zip = await fetchZip(source.url, AbortSignal.timeout(this.deps.loadTimeoutMs ?? LOAD_TIMEOUT_MS));
        bundle = await bundleFromZip(zip, source.sha256 !== undefined ? { ...RAW, expectedSha256: source.sha256 } : RAW);
        req.waitUntil(store.setZip(req.model, bundle.sha256, zip));
      } catch (err) {
        throw unavailable(`Tokenizer URL ${source.url}`, err, req.model);
      }
    }
    return this.fromZip(req, store, source.url, bundle, await info);
  }

  /** GetTokenizer, collected and verified, within LOAD_TIMEOUT_MS. */
  private async fetchFromEngine(engine: EngineConfig): Promise<{ zip: Uint8Array; sha256: string }> {
    const limitMs = this.deps.loadTimeoutMs ?? LOAD_TIMEOUT_MS;
    const signal = AbortSignal.timeout(limitMs);
    const chunks = this.deps.clientOf(engine).getTokenizer({}, { signal });
    try {
      return await verifiedZipFromChunks(chunks, { idleTimeoutMs: this.deps.idleTimeoutMs ?? IDLE_TIMEOUT_MS, signal });
    } catch (err) {
      // Our own deadline, not a caller's abort: say so.
      if (signal.aborted && err instanceof TokenizerBundleError && err.kind === "timeout") {
        throw new TokenizerBundleError("timeout", `no complete bundle within ${limitMs} ms`, { cause: err });
      }
      throw err;
    }
  }

  /** GetModelInfo's context length; a failure leaves the check to the engine. */
  private maxContextLength(engine: EngineConfig): Promise<number | undefined> {
    return this.deps
      .clientOf(engine)
      .getModelInfo({}, { timeoutMs: MODEL_INFO_TIMEOUT_MS })
      .then((info) => (info.maxContextLength > 0 ? info.maxContextLength : undefined))
      .catch((err: unknown) => {
        console.warn(JSON.stringify({ msg: "GetModelInfo failed; the context-length check is left to the engine", engine: engine.name, error: errorText(err) }));
        return undefined;
      });
  }

  /** The bundle from its fast form in the store, undefined on a miss. The fast form carries a
   *  digest of itself and the bundle's sha256, so a damaged or foreign entry is a miss. */
  private async fromFastForm(model: string, store: BundleStore, source: string, sha256: string, maxContextLength: number | undefined): Promise<ModelTokenizer | undefined> {
    if (this.parsed.has(sha256)) return this.finish(model, source, sha256, () => Promise.reject(new Error("unreachable")), maxContextLength);
    const bytes = await store.fastForm?.(sha256);
    const ff = bytes && (await decodeFastForm(bytes, sha256));
    if (!ff) return undefined;
    return this.finish(model, source, sha256, async () => ({ tokenizer: await loadTokenizerFromFastForm(ff), files: ff.files }), maxContextLength);
  }

  /** Parses an unpacked ZIP. A BPE tokenizer answers first with its merges served by their
   *  text; after the response (waitUntil, after a turn of the event loop so the request goes
   *  on first) its merges are resolved to ids in slices, which switches it to the id table,
   *  and the first isolate to do so for a sha256 stores the fast form. */
  private fromZip(req: TokenizerRequest, store: BundleStore, source: string, bundle: TokenizerBundle, maxContextLength: number | undefined): Promise<ModelTokenizer> {
    return this.finish(req.model, source, bundle.sha256, async () => {
      const loaded = await loadTokenizerAndFastForm(bundle);
      const save = store.setFastForm?.bind(store);
      const sha256 = bundle.sha256;
      req.waitUntil(
        new Promise((r) => setTimeout(r, 0))
          .then(() => loaded.fastForm())
          .then(async (ff) => {
            if (!ff || !save) return; // the merges resolved all the same: the id table serves
            const bytes = await encodeFastForm(ff);
            if (bytes) await save(sha256, bytes);
          })
          .catch((err: unknown) => console.warn(JSON.stringify({ msg: "tokenizer fast form not stored", sha256, error: errorText(err) }))),
      );
      return { tokenizer: loaded.tokenizer, files: bundle.files };
    }, maxContextLength);
  }

  private async finish(model: string, source: string, sha256: string, parse: () => Promise<Omit<Parsed, "templates">>, maxContextLength: number | undefined): Promise<ModelTokenizer> {
    let parsed = this.parsed.get(sha256);
    if (!parsed) {
      parsed = parse().then((p) => ({ ...p, templates: new Map() }));
      this.parsed.set(sha256, parsed);
      parsed.catch(() => this.parsed.delete(sha256));
    }
    let p: Parsed;
    try {
      p = await parsed;
    } catch (err) {
      throw unavailable(source === "cache" ? "The cached tokenizer bundle" : source.includes("://") ? `Tokenizer URL ${source}` : `Engine '${source}'`, err, model);
    }
    return {
      model,
      sha256,
      source,
      tokenizer: p.tokenizer,
      maxContextLength,
      modelType: modelTypeOf(p.files),
      chatTemplate(choice) {
        const text = selectChatTemplate(p.files, choice);
        let compiled = p.templates.get(text);
        if (!compiled) {
          compiled = compileChatTemplate(text);
          p.templates.set(text, compiled);
        }
        return compiled;
      },
    };
  }

  private record(model: string, engine: string, sha256: string): void {
    let byEngine = this.served.get(model);
    if (!byEngine) this.served.set(model, (byEngine = new Map()));
    byEngine.set(engine, sha256);
    if (new Set(byEngine.values()).size > 1) {
      console.error(JSON.stringify({ msg: "config error: engines of one model serve different tokenizer bundles", model, engines: Object.fromEntries(byEngine) }));
    }
  }

  /** Once per isolate per engine, after a fresh fetch: the other engines' sha256, so a model
   *  whose engines disagree is reported. Only isolates that missed the shared cache do it. */
  private async sweep(model: string, engines: readonly EngineConfig[]): Promise<void> {
    for (const engine of engines) {
      if (this.swept.has(engine.name)) continue;
      this.swept.add(engine.name);
      try {
        this.record(model, engine.name, (await this.fetchFromEngine(engine)).sha256);
      } catch (err) {
        console.warn(JSON.stringify({ msg: "tokenizer bundle check of a second engine failed", model, engine: engine.name, error: errorText(err) }));
      }
    }
  }
}

async function fetchZipFromUrl(url: string, signal: AbortSignal): Promise<Uint8Array> {
  const res = await fetch(url, { signal, redirect: "follow" });
  if (!res.ok) {
    await res.body?.cancel();
    throw new TokenizerBundleError("stream_failed", `GET ${url} answered ${res.status}`);
  }
  return new Uint8Array(await res.arrayBuffer());
}

function unavailable(who: string, err: unknown, model: string): GatewayError {
  const hint = err instanceof TokenizerBundleError && err.kind === "stream_failed" ? ` (an engine without GetTokenizer needs models.${model}.tokenizer.url)` : "";
  return new GatewayError("tokenizer_unavailable", 502, `${who} gave no usable tokenizer for model '${model}': ${errorText(err)}${hint}`);
}

/** config.json's model_type, when the bundle carries a readable one. */
function modelTypeOf(files: ReadonlyMap<string, string>): string | undefined {
  const text = files.get("config.json");
  if (text === undefined) return undefined;
  try {
    const t = (JSON.parse(text) as { model_type?: unknown }).model_type;
    return typeof t === "string" && t !== "" ? t : undefined;
  } catch {
    return undefined;
  }
}
