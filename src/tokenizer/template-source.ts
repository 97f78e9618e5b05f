// Which chat template a bundle renders with, chosen as transformers chooses: chat_template.jinja,
// else chat_template.json, else tokenizer_config.json's chat_template. A named set (a list of
// {name, template}) picks the requested name, else "tool_use" when tools are given and it
// exists, else "default". additional_chat_templates/<name>.jinja adds names.
import { ChatTemplateError } from "./errors.js";

export interface TemplateChoice {
  /** A template name the client asked for (vLLM's chat_template_kwargs do not carry one; the
   *  gateway may). */
  name?: string;
  /** Whether the request carries tools (selects "tool_use" from a named set). */
  hasTools: boolean;
}

function parseJson(files: ReadonlyMap<string, string>, name: string): Record<string, unknown> | undefined {
  const text = files.get(name);
  if (text === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The named templates of a bundle ("default" for an unnamed one). */
export function chatTemplates(files: ReadonlyMap<string, string>): Map<string, string> {
  const out = new Map<string, string>();
  const raw =
    files.get("chat_template.jinja") ??
    parseJson(files, "chat_template.json")?.chat_template ??
    parseJson(files, "tokenizer_config.json")?.chat_template;
  if (typeof raw === "string") out.set("default", raw);
  else if (Array.isArray(raw)) {
    for (const t of raw) {
      const { name, template } = (t ?? {}) as { name?: unknown; template?: unknown };
      if (typeof name === "string" && typeof template === "string") out.set(name, template);
    }
  }
  for (const [path, text] of files) {
    const m = /^additional_chat_templates\/(.+)\.jinja$/.exec(path);
    if (m) out.set(m[1]!, text);
  }
  return out;
}

export function selectChatTemplate(files: ReadonlyMap<string, string>, choice: TemplateChoice): string {
  const templates = chatTemplates(files);
  if (templates.size === 0) {
    throw new ChatTemplateError("no_template", "this model has no chat template; use the completions API with a prompt");
  }
  if (choice.name !== undefined) {
    const named = templates.get(choice.name);
    if (named === undefined) {
      throw new ChatTemplateError("invalid_request", `chat template "${choice.name}" not found; this model has: ${[...templates.keys()].join(", ")}`);
    }
    return named;
  }
  if (choice.hasTools && templates.has("tool_use")) return templates.get("tool_use")!;
  const def = templates.get("default");
  if (def === undefined) {
    throw new ChatTemplateError("invalid_request", `this model has several chat templates (${[...templates.keys()].join(", ")}) and none is "default"`);
  }
  return def;
}
