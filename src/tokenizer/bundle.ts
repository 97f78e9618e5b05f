// The tokenizer bundle an engine serves over GetTokenizer: a ZIP (deflate) of the model
// directory's tokenizer files, streamed in 64 KiB chunks with the hex sha256 of the whole ZIP on
// the last chunk. We refuse to tokenize with anything we could not verify: a wrong tokenizer
// produces fluent garbage, which is worse than a 502.
//
// Unzipping: the central directory read in JavaScript, entries inflated by the runtime's own
// DecompressionStream("deflate-raw") (zip-reader.ts; a JavaScript inflate cost about 0.2 s of
// a cold load on Qwen3).
import type { GetTokenizerChunk } from "../gen/common_pb.js";
import { TokenizerBundleError } from "./errors.js";
import { decodeUtf8 } from "./utf8.js";
import { zipEntries, zipEntryBytes } from "./zip-reader.js";

/** Files the gateway reads; everything else in the ZIP (merges.txt, *.model, ...) is skipped. */
const WANTED = new Set([
  "tokenizer.json",
  "tokenizer_config.json",
  "config.json",
  "generation_config.json",
  "special_tokens_map.json",
  "chat_template.json",
]);

export interface BundleLimits {
  /** Keep tokenizer.json as bytes (`tokenizerJsonBytes`), checked and decoded by the loader. */
  rawTokenizerJson?: boolean;
  /** Cap on the ZIP as streamed (default 64 MiB). */
  maxZipBytes?: number;
  /** Cap on the sum of the unpacked files we keep (default 96 MiB; a ZIP bomb guard). */
  maxUnpackedBytes?: number;
}

export interface FetchBundleOptions extends BundleLimits {
  /** Give up when the stream yields nothing for this long (default 30 s): never hang. */
  idleTimeoutMs?: number;
  /** Aborts the collection (the caller's request went away). */
  signal?: AbortSignal;
}

/** File name (basename) -> UTF-8 text. */
export interface TokenizerBundle {
  /** Every wanted file, but tokenizer.json when it is kept as bytes (`tokenizerJsonBytes`). */
  files: ReadonlyMap<string, string>;
  /** tokenizer.json undecoded (unpacked with `rawTokenizerJson`): the tokenizer reads it
   *  without decoding most of it (bpe-scan.ts). */
  tokenizerJsonBytes?: Uint8Array;
  /** Hex sha256 of the ZIP: the cache key across isolates. */
  sha256: string;
  zipBytes: number;
}

const DEFAULT_MAX_ZIP = 64 * 1024 * 1024;
const DEFAULT_MAX_UNPACKED = 96 * 1024 * 1024;
const DEFAULT_IDLE_MS = 30_000;

/** Collects a GetTokenizer stream, verifies its sha256 and unpacks it. */
export async function bundleFromChunks(
  chunks: AsyncIterable<GetTokenizerChunk>,
  options: FetchBundleOptions = {},
): Promise<TokenizerBundle> {
  const { zip, sha256 } = await verifiedZipFromChunks(chunks, options);
  return unpack(zip, sha256, options);
}

/** Collects a GetTokenizer stream and verifies its sha256, without unpacking: the ZIP bytes
 *  are what a cross-isolate cache stores. */
export async function verifiedZipFromChunks(
  chunks: AsyncIterable<GetTokenizerChunk>,
  options: FetchBundleOptions = {},
): Promise<{ zip: Uint8Array; sha256: string }> {
  const { zip, sha256 } = await collectChunks(chunks, options);
  if (sha256 === undefined) throw new TokenizerBundleError("missing_sha256", "the stream ended without a sha256 on its last chunk");
  const actual = await sha256Hex(zip);
  if (actual !== sha256.toLowerCase()) {
    throw new TokenizerBundleError("sha256_mismatch", `sha256 mismatch: engine said ${sha256}, bytes hash to ${actual}`);
  }
  return { zip, sha256: actual };
}

/** Unpacks a ZIP whose sha256 the caller has just verified (no second hash). */
export function unpackVerifiedZip(zip: Uint8Array, sha256: string, limits: BundleLimits = {}): Promise<TokenizerBundle> {
  return unpack(zip, sha256, limits);
}

/** Unpacks a ZIP fetched some other way (URL / R2 override). `expectedSha256`, when given, is checked. */
export async function bundleFromZip(
  zip: Uint8Array,
  options: BundleLimits & { expectedSha256?: string } = {},
): Promise<TokenizerBundle> {
  const maxZip = options.maxZipBytes ?? DEFAULT_MAX_ZIP;
  if (zip.byteLength > maxZip) throw new TokenizerBundleError("too_large", `ZIP of ${zip.byteLength} bytes exceeds ${maxZip}`);
  const actual = await sha256Hex(zip);
  if (options.expectedSha256 !== undefined && actual !== options.expectedSha256.toLowerCase()) {
    throw new TokenizerBundleError("sha256_mismatch", `sha256 mismatch: expected ${options.expectedSha256}, bytes hash to ${actual}`);
  }
  return unpack(zip, actual, options);
}

export async function sha256Hex(data: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return hex;
}

async function collectChunks(
  chunks: AsyncIterable<GetTokenizerChunk>,
  options: FetchBundleOptions,
): Promise<{ zip: Uint8Array; sha256: string | undefined }> {
  const maxZip = options.maxZipBytes ?? DEFAULT_MAX_ZIP;
  const idleMs = options.idleTimeoutMs ?? DEFAULT_IDLE_MS;
  const parts: Uint8Array[] = [];
  let total = 0;
  let sha256: string | undefined;
  const it = chunks[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await nextWithin(it, idleMs, options.signal);
      if (next.done) break;
      const chunk = next.value;
      total += chunk.data.byteLength;
      if (total > maxZip) throw new TokenizerBundleError("too_large", `stream exceeds ${maxZip} bytes`);
      if (chunk.data.byteLength > 0) parts.push(chunk.data);
      if (chunk.sha256 !== "") sha256 = chunk.sha256;
    }
  } catch (err) {
    // Stop the server stream (cancels the RPC) whatever went wrong; never leave it dangling.
    void it.return?.();
    if (err instanceof TokenizerBundleError) throw err;
    throw new TokenizerBundleError("stream_failed", `GetTokenizer failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
  const zip = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    zip.set(p, at);
    at += p.byteLength;
  }
  return { zip, sha256 };
}

/** it.next(), but rejecting after `idleMs` without a chunk, or when `signal` aborts. */
function nextWithin<T>(it: AsyncIterator<T>, idleMs: number, signal: AbortSignal | undefined): Promise<IteratorResult<T>> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new TokenizerBundleError("timeout", "aborted by the caller"));
    const onAbort = () => finish(() => reject(new TokenizerBundleError("timeout", "aborted by the caller")));
    const timer = setTimeout(() => finish(() => reject(new TokenizerBundleError("timeout", `no chunk for ${idleMs} ms`))), idleMs);
    let settled = false;
    function finish(fn: () => void) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      fn();
    }
    signal?.addEventListener("abort", onAbort, { once: true });
    it.next().then(
      (r) => finish(() => resolve(r)),
      (e: unknown) => finish(() => reject(e)),
    );
  });
}

function baseName(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? path : path.slice(i + 1);
}

function isWanted(name: string): boolean {
  return WANTED.has(name) || name.endsWith(".jinja");
}

async function unpack(zip: Uint8Array, sha256: string, limits: BundleLimits): Promise<TokenizerBundle> {
  const maxUnpacked = limits.maxUnpackedBytes ?? DEFAULT_MAX_UNPACKED;
  let declared = 0;
  const raw: [string, Uint8Array][] = [];
  try {
    const wanted = zipEntries(zip).filter((e) => isWanted(baseName(e.name)));
    // Every entry is held to its declared size, so the declared sum bounds what is unpacked.
    for (const e of wanted) {
      declared += e.size;
      if (declared > maxUnpacked) throw new TokenizerBundleError("too_large", `unpacked files exceed ${maxUnpacked} bytes`);
    }
    for (const e of wanted) raw.push([e.name, await zipEntryBytes(zip, e)]);
  } catch (err) {
    if (err instanceof TokenizerBundleError) throw err;
    throw new TokenizerBundleError("not_a_zip", `not a readable ZIP (${(err as Error)?.message ?? String(err)})`, { cause: err });
  }
  const files = new Map<string, string>();
  let tokenizerJsonBytes: Uint8Array | undefined;
  for (const [path, bytes] of raw) {
    const name = path.startsWith("additional_chat_templates/") ? path : baseName(path);
    if (limits.rawTokenizerJson && name === "tokenizer.json") {
      tokenizerJsonBytes = bytes;
      continue;
    }
    const text = await decodeUtf8(bytes);
    if (text === undefined) throw new TokenizerBundleError("invalid_file", `${name} is not valid UTF-8`);
    files.set(name, text);
  }
  if (!files.has("tokenizer.json") && !tokenizerJsonBytes) {
    throw new TokenizerBundleError("missing_tokenizer_json", "the bundle has no tokenizer.json (only tokenizer.json bundles are supported at the edge)");
  }
  return { files, sha256, zipBytes: zip.byteLength, ...(tokenizerJsonBytes ? { tokenizerJsonBytes } : {}) };
}

/** Parses a JSON file of the bundle, naming the file when it is malformed; undefined if absent. */
export function bundleJson(bundle: TokenizerBundle, name: string): Record<string, unknown> | undefined {
  const text = bundle.files.get(name);
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new TokenizerBundleError("invalid_file", `${name} is not valid JSON`, { cause: err });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new TokenizerBundleError("invalid_file", `${name} must hold a JSON object`);
  }
  return parsed as Record<string, unknown>;
}
