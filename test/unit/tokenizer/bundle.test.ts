// GetTokenizer bundle collection: verification and every typed failure a 502 carries.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GetTokenizerChunkSchema, type GetTokenizerChunk } from "../../../src/gen/common_pb.js";
import { bundleFromChunks, bundleFromZip, sha256Hex } from "../../../src/tokenizer/bundle.js";
import { TokenizerBundleError } from "../../../src/tokenizer/errors.js";
import { qwen3Files, zipFiles } from "./qwen3-files.js";

const CHUNK = 64 * 1024;

async function* chunked(zip: Uint8Array, sha: string | undefined): AsyncGenerator<GetTokenizerChunk> {
  for (let at = 0; at < zip.byteLength; at += CHUNK) {
    const last = at + CHUNK >= zip.byteLength;
    yield create(GetTokenizerChunkSchema, { data: zip.subarray(at, at + CHUNK), sha256: last ? (sha ?? "") : "" });
  }
}

async function kindOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(TokenizerBundleError);
    expect((err as Error).message).toMatch(/^tokenizer bundle: /);
    return (err as TokenizerBundleError).kind;
  }
  throw new Error("expected a TokenizerBundleError");
}

const small = zipFiles({ "tokenizer.json": "{}", "tokenizer_config.json": "{\"eos_token\": \"</s>\"}", "chat_template.jinja": "{{ 1 }}", "merges.txt": "x" });

describe("bundleFromChunks", () => {
  it("reassembles the real Qwen3 bundle from 64 KiB chunks and verifies it", async () => {
    const zip = zipFiles(qwen3Files());
    expect(zip.byteLength).toBeGreaterThan(CHUNK * 10);
    const sha = await sha256Hex(zip);
    const bundle = await bundleFromChunks(chunked(zip, sha));
    expect(bundle.sha256).toBe(sha);
    expect([...bundle.files.keys()].sort()).toEqual(["generation_config.json", "tokenizer.json", "tokenizer_config.json"]);
    expect(bundle.files.get("tokenizer.json")).toBe(qwen3Files()["tokenizer.json"]);
  });

  it("keeps only the files the gateway reads, *.jinja included", async () => {
    const bundle = await bundleFromChunks(chunked(small, await sha256Hex(small)));
    expect([...bundle.files.keys()].sort()).toEqual(["chat_template.jinja", "tokenizer.json", "tokenizer_config.json"]);
  });

  it("accepts an upper-case hex sha256", async () => {
    const bundle = await bundleFromChunks(chunked(small, (await sha256Hex(small)).toUpperCase()));
    expect(bundle.files.has("tokenizer.json")).toBe(true);
  });

  it("refuses a wrong sha256", async () => {
    expect(await kindOf(bundleFromChunks(chunked(small, "0".repeat(64))))).toBe("sha256_mismatch");
  });

  it("refuses a stream without a sha256", async () => {
    expect(await kindOf(bundleFromChunks(chunked(small, undefined)))).toBe("missing_sha256");
  });

  it("refuses a truncated ZIP even when its sha256 matches the truncated bytes", async () => {
    const cut = small.subarray(0, small.byteLength - 30);
    expect(await kindOf(bundleFromChunks(chunked(cut, await sha256Hex(cut))))).toBe("not_a_zip");
  });

  it("refuses bytes that are not a ZIP at all", async () => {
    const junk = new TextEncoder().encode("definitely not a zip file");
    expect(await kindOf(bundleFromChunks(chunked(junk, await sha256Hex(junk))))).toBe("not_a_zip");
  });

  it("refuses a bundle without tokenizer.json", async () => {
    const zip = zipFiles({ "tokenizer_config.json": "{}", "vocab.json": "{}" });
    expect(await kindOf(bundleFromChunks(chunked(zip, await sha256Hex(zip))))).toBe("missing_tokenizer_json");
  });

  it("refuses a stream over the size cap", async () => {
    const zip = zipFiles(qwen3Files());
    expect(await kindOf(bundleFromChunks(chunked(zip, await sha256Hex(zip)), { maxZipBytes: 100_000 }))).toBe("too_large");
  });

  it("refuses files that unpack past the cap (ZIP bomb guard)", async () => {
    const zip = zipFiles({ "tokenizer.json": " ".repeat(2_000_000) });
    expect(zip.byteLength).toBeLessThan(10_000);
    expect(await kindOf(bundleFromZip(zip, { maxUnpackedBytes: 1_000_000 }))).toBe("too_large");
  });

  it("gives up on a stream that stops sending, and cancels it", async () => {
    let returned = false;
    const stalled: AsyncIterable<GetTokenizerChunk> = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise<IteratorResult<GetTokenizerChunk>>(() => {}),
        return: async () => {
          returned = true;
          return { done: true, value: undefined };
        },
      }),
    };
    expect(await kindOf(bundleFromChunks(stalled, { idleTimeoutMs: 50 }))).toBe("timeout");
    expect(returned).toBe(true);
  });

  it("honours the caller's abort signal", async () => {
    const ac = new AbortController();
    const stalled: AsyncIterable<GetTokenizerChunk> = {
      [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<GetTokenizerChunk>>(() => {}) }),
    };
    const p = bundleFromChunks(stalled, { signal: ac.signal });
    ac.abort();
    expect(await kindOf(p)).toBe("timeout");
  });

  it("wraps an RPC failure mid-stream", async () => {
    async function* failing(): AsyncGenerator<GetTokenizerChunk> {
      yield create(GetTokenizerChunkSchema, { data: small.subarray(0, 10) });
      throw new Error("unavailable: engine went away");
    }
    expect(await kindOf(bundleFromChunks(failing()))).toBe("stream_failed");
  });
});

describe("bundleFromZip", () => {
  it("loads raw ZIP bytes (URL / R2 override) and checks an expected sha256", async () => {
    const sha = await sha256Hex(small);
    expect((await bundleFromZip(small, { expectedSha256: sha })).sha256).toBe(sha);
    expect(await kindOf(bundleFromZip(small, { expectedSha256: "f".repeat(64) }))).toBe("sha256_mismatch");
  });
});
