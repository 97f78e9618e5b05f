// Admin API request bodies: the config's engine entry schema plus model and role, so an
// engine registered at run time takes exactly the keys a config engine does. Every failure
// is a 400 whose message and `param` name the field.
// A namespace import: esbuild keeps only the members used (`import { z }` keeps all of zod,
// its locales included: ~110 KiB of gzip in the bundle).
import * as z from "zod";
import { engineSchema } from "../../config/schema.js";
import { GatewayError } from "../../core/errors.js";
import { ENGINE_ROLES } from "../../routing/registry-types.js";

/** Ids appear in URL paths (/admin/engines/:id) and metric blobs: no slashes, no spaces. */
export const ENGINE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export const registerBodySchema = engineSchema.extend({
  name: z
    .string()
    .regex(ENGINE_ID_PATTERN, "must be 1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit")
    .optional(),
  model: z.string().min(1).max(256),
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
