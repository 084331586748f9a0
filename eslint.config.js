import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["node_modules/", "dist/", ".data/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "require-yield": "off",
    },
  },
  {
    files: ["backend/enrollment/assets/*.js"],
    languageOptions: {
      sourceType: "script",
      globals: { document: "readonly", window: "readonly" },
    },
  },
  {
    files: ["backend/**/*.ts"],
    ignores: ["backend/platform/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [{ name: "postgres", message: "Only platform/Db.ts talks to postgres.js." }],
          patterns: [
            {
              group: ["@nats-io/*"],
              message: "Only backend/platform/ talks to nats.js: use platform/Nats.ts.",
            },
            {
              group: ["**/platform/nats/*"],
              message: "The JetStream protocol code is the platform's own: use platform/Nats.ts.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["backend/platform/**/*.ts"],
    ignores: ["backend/platform/Db.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { paths: [{ name: "postgres", message: "Only platform/Db.ts talks to postgres.js." }] },
      ],
    },
  },
)
