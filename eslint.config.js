// Lint config: typescript-eslint's recommended rules over all TypeScript; generated code is
// left alone (it comes from proto/ through `npm run generate`). The layering of src/ is
// enforced here (docs/architecture.md): a module may import only from its own layer and the
// layers below it, so an upward import fails `npm run lint`.
import tseslint from "typescript-eslint";

/** Each layer, bottom up, and the sibling folders of src/ it may import from. */
const LAYERS = [
  ["core", []],
  ["config", ["core"]],
  ["metrics", ["core", "config"]],
  // The tool-call and reasoning parsers and the tool_choice constraint builder: pure text in,
  // OpenAI shapes out (docs/tools.md).
  ["parsers", ["core", "gen"]],
  // The response builder reads replies through the output parsers (pure, below it).
  ["tokenizer", ["core", "gen", "parsers"]],
  ["backends", ["core", "config", "gen", "tokenizer", "parsers"]],
  ["pd", ["core", "config", "gen", "metrics", "tokenizer", "parsers", "backends"]],
  ["routing", ["core", "config", "gen", "metrics", "tokenizer", "parsers", "backends", "pd"]],
  // The error renderers every surface and the middleware answer with (one per protocol).
  ["errors", ["core"]],
  // State kept for clients across requests (the Responses API's stored responses).
  ["conversations", ["core"]],
  ["middleware", ["core", "config", "gen", "metrics", "routing", "errors", "context.js", "env.js"]],
];
const SRC_ENTRIES = ["core", "config", "metrics", "tokenizer", "parsers", "backends", "pd", "routing", "errors", "conversations", "middleware", "api", "gen", "app.js", "index.js", "context.js", "env.js"];

function layerRule([layer, allowed]) {
  const forbidden = SRC_ENTRIES.filter((e) => e !== layer && !allowed.includes(e));
  return {
    files: [`src/${layer}/**/*.ts`],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: forbidden.flatMap((e) => [`../${e}`, `../${e}/**`, `../../${e}`, `../../${e}/**`]),
              message: `src/${layer} may import only from ${allowed.length ? allowed.join(", ") : "nothing else in the project"} (docs/architecture.md).`,
            },
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  { ignores: ["node_modules/", "src/gen/", ".wrangler/", "dist/"] },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  ...LAYERS.map(layerRule),
  {
    // The Worker imports no Node module: wrangler.toml's comment on nodejs_compat relies on it.
    files: ["src/**/*.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        { selector: "ImportDeclaration[source.value=/^node:/], ImportExpression[source.value=/^node:/]", message: "src/ runs in workerd: no Node modules (wrangler.toml, compatibility_flags)." },
      ],
    },
  },
  // Surfaces sit on top of everything but the app that composes them, and one surface does
  // not reach into another's modules (the admin API reads bodies and renders errors with the
  // shared core/ and errors/ modules, not the OpenAI surface's).
  ...["openai", "engine", "admin", "anthropic"].map(surfaceRule),
  {
    files: ["src/api/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [{ group: ["../app.js", "../index.js"], message: "surfaces do not import the app that mounts them" }] }] },
  },
);

/** src/api/<surface>: not the app that mounts it, nor another surface's folder. */
function surfaceRule(surface) {
  const others = ["openai", "engine", "admin", "anthropic"].filter((s) => s !== surface);
  return {
    files: [`src/api/${surface}/**/*.ts`],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["../../app.js", "../../index.js", "../app.js", "../index.js"], message: "surfaces do not import the app that mounts them" },
            // A regex, not a glob: it catches the other surface from any depth of this one's
            // folder (`../openai/x.js`, `../../openai/x.js`, `../../api/openai/x.js`).
            { regex: `^(\\.\\./)+(api/)?(${others.join("|")})(/|$)`, message: `src/api/${surface} does not import another surface's modules; shared ones live in src/api/*.ts, src/errors/ or below (docs/architecture.md).` },
          ],
        },
      ],
    },
  };
}
