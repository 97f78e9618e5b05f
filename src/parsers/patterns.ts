// Which parser a model gets when its config names none: the upstream gateway's pattern tables
// (smg crates/tool_parser/src/factory.rs register_default_mappings and
// crates/reasoning_parser/src/factory.rs, lightseekorg/smg@73da68ca), as data. A pattern
// matches when the lower-cased model name contains it; the longest match wins. Rows naming a
// parser this gateway lacks stay in the table: such a model gets no parser rather than a
// shorter pattern's wrong one. Rows marked "gateway" are this gateway's additions.

/** [pattern, tool parser] (smg's glob stems, its trailing `*` dropped; upper-case duplicates
 *  folded, since matching ignores case). */
export const TOOL_PARSER_PATTERNS: readonly (readonly [string, string])[] = [
  ["gpt-4", "json"],
  ["gpt-3.5", "json"],
  ["gpt-4o", "json"],
  ["claude-", "json"],
  ["mistral-", "mistral"],
  ["mixtral-", "mistral"],
  ["qwen/qwen3.5", "qwen_xml"],
  ["qwen3.5", "qwen_xml"],
  ["qwen/qwen3-coder", "qwen_xml"],
  ["qwen3-coder", "qwen_xml"],
  ["qwen", "qwen"],
  ["llama-4", "pythonic"],
  ["meta-llama-4", "pythonic"],
  ["llama-3.2", "llama"],
  ["meta-llama-3.2", "llama"],
  ["llama-3", "llama"], // gateway: Llama 3.1 / 3.3 write the same JSON calls (vLLM's llama3_json)
  ["llama-", "json"],
  ["meta-llama-", "json"],
  ["deepseek-v3", "deepseek"],
  ["deepseek-ai/deepseek-v3", "deepseek"],
  ["deepseek-v3.1", "deepseek31"],
  ["deepseek-ai/deepseek-v3.1", "deepseek31"],
  ["deepseek-v3.2-exp", "deepseek31"],
  ["deepseek-ai/deepseek-v3.2-exp", "deepseek31"],
  ["deepseek-v3.2", "deepseek32"],
  ["deepseek-ai/deepseek-v3.2", "deepseek32"],
  ["deepseek-v4", "deepseek_v4"],
  ["deepseek-ai/deepseek-v4", "deepseek_v4"],
  ["deepseek-", "pythonic"],
  ["glm-4.5", "glm45_moe"],
  ["glm-4.6", "glm45_moe"],
  ["glm-4.7", "glm47_moe"],
  ["glm-5", "glm47_moe"],
  ["glm-", "json"],
  ["sarashina", "sarashina"],
  ["step3", "step3"],
  ["step-3", "step3"],
  ["kimi-k2", "kimik2"],
  ["kimi-k3", "kimi_k3"],
  ["kimi_k3", "kimi_k3"],
  ["inkling", "inkling"],
  ["minimax", "minimax_m2"],
  ["command-r", "cohere"],
  ["command-r-plus", "cohere"],
  ["command-a", "cohere"],
  ["c4ai-command", "cohere"],
  ["cohere", "cohere"],
  ["cohereforai", "cohere"],
  ["gemini-", "json"],
  ["palm-", "json"],
  ["gemma-", "json"],
];

/** [pattern, reasoning parser] (smg's reasoning factory registers plain substrings). */
export const REASONING_PARSER_PATTERNS: readonly (readonly [string, string])[] = [
  ["deepseek-r1", "deepseek_r1"],
  ["deepseek-v3.1", "deepseek_v31"],
  ["deepseek-v3-1", "deepseek_v31"],
  ["qwen3-thinking", "qwen3_thinking"],
  ["qwen-thinking", "qwen3_thinking"],
  ["qwen3", "qwen3"],
  ["qwen", "qwen3"],
  ["glm45", "glm45"],
  ["glm47", "glm45"],
  ["glm-5", "glm45"],
  ["kimi-k2-thinking", "kimi_thinking"],
  ["kimi-k2.5", "kimi_k25"],
  ["kimi-k3", "kimi_k3"],
  ["kimi_k3", "kimi_k3"],
  ["kimi", "kimi"],
  ["step3", "step3"],
  ["minimax", "minimax"],
  ["minimax-m2", "minimax"],
  ["mm-m2", "minimax"],
  ["command-r", "cohere_cmd"],
  ["command-a", "cohere_cmd"],
  ["c4ai-command", "cohere_cmd"],
  ["cohere", "cohere_cmd"],
  ["nemotron-nano", "nano_v3"],
  ["nemotron-super", "nano_v3"],
  ["nano-v3", "nano_v3"],
  ["inkling", "inkling"],
];

/** gateway: GetModelInfo's model_type (the checkpoint's config.json `model_type`) when the
 *  served name matched nothing, e.g. a model served under an alias. Exact match. */
export const TOOL_PARSER_BY_MODEL_TYPE: Readonly<Record<string, string>> = {
  qwen2: "qwen",
  qwen2_moe: "qwen",
  qwen3: "qwen",
  qwen3_moe: "qwen",
  llama: "llama",
  llama4: "pythonic",
  mistral: "mistral",
  mixtral: "mistral",
  deepseek_v3: "deepseek",
};

export const REASONING_PARSER_BY_MODEL_TYPE: Readonly<Record<string, string>> = {
  qwen3: "qwen3",
  qwen3_moe: "qwen3",
};
