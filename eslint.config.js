// Lint config: typescript-eslint's recommended rules over all TypeScript; generated code is
// left alone (it comes from proto/ through `npm run generate`).
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "src/gen/", ".wrangler/", "dist/"] },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
);
