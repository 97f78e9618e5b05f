// The layer rules of eslint.config.js, run on import lines placed in real src/ paths: each
// forbidden import fails lint, and its allowed neighbour does not, so a rule that stopped
// matching (a renamed folder, a glob that no longer fits) fails here rather than going quiet.
import { ESLint } from "eslint";
import { beforeAll, describe, expect, it } from "vitest";

let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({ cwd: process.cwd() });
});

/** The no-restricted-imports messages lint gives `source` as the file at `filePath`. */
async function restricted(filePath: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${source}\nexport const x = y;\n`, { filePath });
  return result!.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

const FORBIDDEN: [file: string, source: string][] = [
  // admin does not reach into the OpenAI or VllmEngine surfaces' modules, from any depth
  ["src/api/admin/routes.ts", 'import { y } from "../openai/request.js";'],
  ["src/api/admin/routes.ts", 'import { y } from "../engine/abort.js";'],
  ["src/api/admin/nested/view.ts", 'import { y } from "../../openai/errors.js";'],
  ["src/api/admin/nested/view.ts", 'import { y } from "../../api/engine/errors.js";'],
  ["src/api/admin/routes.ts", 'import { y } from "../openai";'],
  // nor the surfaces each other's, nor the app that mounts them
  ["src/api/openai/routes.ts", 'import { y } from "../admin/bodies.js";'],
  ["src/api/openai/routes.ts", 'import { y } from "../engine/errors.js";'],
  ["src/api/engine/service.ts", 'import { y } from "../openai/request.js";'],
  ["src/api/engine/service.ts", 'import { y } from "../../app.js";'],
  // a lower layer never imports a higher one
  ["src/backends/fetch.ts", 'import { y } from "../routing/isolate.js";'],
  ["src/pd/leg.ts", 'import { y } from "../routing/outcomes.js";'],
  ["src/core/errors.ts", 'import { y } from "../backends/fetch.js";'],
];

const ALLOWED: [file: string, source: string][] = [
  ["src/api/admin/routes.ts", 'import { y } from "../../errors/render.js";'],
  ["src/api/admin/routes.ts", 'import { y } from "../context-window.js";'],
  ["src/api/admin/routes.ts", 'import { y } from "../../routing/isolate.js";'],
  ["src/api/openai/routes.ts", 'import { y } from "../pd-override.js";'],
  ["src/routing/isolate.ts", 'import { y } from "../backends/fetch.js";'],
  ["src/backends/fetch.ts", 'import { y } from "../core/errors.js";'],
];

describe("eslint layer rules", () => {
  it.each(FORBIDDEN)("%s may not: %s", async (file, source) => {
    expect(await restricted(file, source)).toHaveLength(1);
  });

  it.each(ALLOWED)("%s may: %s", async (file, source) => {
    expect(await restricted(file, source)).toEqual([]);
  });
});
