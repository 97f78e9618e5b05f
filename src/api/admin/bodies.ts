// Admin API request bodies: the config's engine entry schema plus model and role, so an
// engine registered at run time takes exactly the keys a config engine does. Every failure
// is a 400 whose message and `param` name the field.
// A namespace import: esbuild keeps only the members used (`import { z }` keeps all of zod,
// its locales included: ~110 KiB of gzip in the bundle).
import * as z from "zod";
import { engineSchema } from "../../config/schema.js";
import { GatewayError } from "../../core/errors.js";
import { ENGINE_ROLES } from "../../routing/registry-types.js";
import { ENGINE_ID_PATTERN, ENGINE_ID_RULE, MODEL_NAME_PATTERN, MODEL_NAME_RULE } from "../../routing/registry-names.js";

export { ENGINE_ID_PATTERN };

export const registerBodySchema = engineSchema.extend({
  name: z.string().regex(ENGINE_ID_PATTERN, ENGINE_ID_RULE).optional(),
  model: z.string().regex(MODEL_NAME_PATTERN, MODEL_NAME_RULE),
  role: z.enum(ENGINE_ROLES),
});
export type RegisterBody = z.infer<typeof registerBodySchema>;

/** PUT replaces the engine; `status` may bring a drained engine back. */
export const updateBodySchema = registerBodySchema.extend({
  status: z.enum(["active", "draining"]).optional(),
});
export type UpdateBody = z.infer<typeof updateBodySchema>;

const invalid = (message: string, param: string | null) =>
  new GatewayError("invalid_request", 400, message, undefined, param ?? undefined);

/** JSON text -> validated body, or a 400 naming the first bad field. Pure. */
export function parseBody<S extends z.ZodType>(schema: S, text: string): z.infer<S> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw invalid(`body is not valid JSON: ${(err as Error).message}`, null);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw invalid("body must be a JSON object", null);
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => {
    const path = [...issue.path.map(String), ...(issue.code === "unrecognized_keys" ? [issue.keys[0] ?? ""] : [])];
    const param = path.join(".") || null;
    const message = issue.code === "unrecognized_keys" ? "unknown field" : issue.message;
    return { param, text: `${param ?? "(body)"}: ${message}` };
  });
  throw invalid(issues.map((i) => i.text).join("; "), issues[0]!.param);
}
