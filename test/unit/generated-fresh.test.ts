// src/gen must be exactly what `npm run generate` (buf + protoc-gen-es) makes from proto/:
// CI fails when someone edits a .proto file and forgets to regenerate, or edits src/gen by hand.
// The real buf.yaml and buf.gen.yaml run in a scratch copy, so the check follows the template.
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";

it("src/gen is fresh", () => {
  const root = process.cwd();
  const scratch = mkdtempSync(join(tmpdir(), "gen-"));
  try {
    for (const f of ["buf.yaml", "buf.gen.yaml"]) cpSync(join(root, f), join(scratch, f));
    cpSync(join(root, "proto"), join(scratch, "proto"), { recursive: true });
    execFileSync(join(root, "node_modules/.bin/buf"), ["generate"], {
      cwd: scratch,
      env: { ...process.env, PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH}` },
      stdio: "pipe",
    });
    const fresh = join(scratch, "src/gen");
    const files = readdirSync(fresh).sort();
    expect(readdirSync(join(root, "src/gen")).sort()).toEqual(files);
    for (const f of files) {
      expect(readFileSync(join(root, "src/gen", f), "utf8"), `src/gen/${f} is stale: run npm run generate`).toBe(readFileSync(join(fresh, f), "utf8"));
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}, 60_000);
