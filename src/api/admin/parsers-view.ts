// Which tool and reasoning parsers each model's replies go through, and why (docs/tools.md):
// the same resolveParsers call the chat path makes, with the model type this isolate has seen
// in the model's tokenizer bundle (null until it has loaded one, when only the name and the
// config decide). Models served by openai-http engines only are left out: vLLM parses there.
import type { GatewayContext } from "../../context.js";
import { resolveParsers, type ParserChoice } from "../../parsers/resolve.js";
import { optional } from "../../core/optional.js";
import { ENGINE_ROLES } from "../../routing/registry-types.js";

const choiceView = (c: ParserChoice<unknown>) => ({ name: c.name, source: c.source, ...optional("pattern", c.pattern), available: c.name === "none" || c.format !== undefined });

export function parsersView(gw: GatewayContext, model: string | undefined) {
  const out: Record<string, unknown> = {};
  for (const [name, m] of Object.entries(gw.config.models)) {
    if (model !== undefined && name !== model) continue;
    const engines = ENGINE_ROLES.flatMap((role) => m[role]);
    if (!engines.some((e) => e.transport !== "openai-http")) continue;
    // null: not loaded by this isolate yet; undefined (shown as null too): the bundle has none.
    const modelType = gw.isolate.tokenizers ? gw.isolate.tokenizers.modelType(name) : null;
    const parsers = resolveParsers(name, modelType ?? undefined, { ...optional("tool_parser", m.tool_parser), ...optional("reasoning_parser", m.reasoning_parser) });
    out[name] = { model_type: modelType ?? null, tokenizer_loaded: modelType !== null, tool_parser: choiceView(parsers.tool), reasoning_parser: choiceView(parsers.reasoning) };
  }
  return out;
}
