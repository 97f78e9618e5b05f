// Node-side tests of the deploy tooling: a temporary copy of the project's wrangler.toml with
// one edit, so a test can break one thing on purpose without touching the committed file.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const COMMITTED_WRANGLER = join(ROOT, "wrangler.toml");

const made: string[] = [];

/** Writes `edit(committed text)` to <tmp>/wrangler.toml, with `main` pointing back at the
 *  project's entry so the copy also bundles. `edit` must change the text. */
export function wranglerCopy(edit: (toml: string) => string): string {
  const committed = readFileSync(COMMITTED_WRANGLER, "utf8");
  const edited = edit(committed);
  if (edited === committed) throw new Error("wranglerCopy: the edit changed nothing (did wrangler.toml change?)");
  const dir = mkdtempSync(join(tmpdir(), "wrangler-copy-"));
  made.push(dir);
  const path = join(dir, "wrangler.toml");
  writeFileSync(path, edited.replace(/^main\s*=.*$/m, `main = ${JSON.stringify(join(ROOT, "src", "index.ts"))}`));
  return path;
}

/** Replaces exactly one occurrence of `from`; anything else is a broken test. */
export function replaceOnce(text: string, from: string | RegExp, to: string): string {
  const count = typeof from === "string" ? text.split(from).length - 1 : (text.match(new RegExp(from.source, `${from.flags.replace("g", "")}g`)) ?? []).length;
  if (count !== 1) throw new Error(`replaceOnce: ${String(from)} occurs ${count} times`);
  return text.replace(from, to);
}

export function removeWranglerCopies(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
