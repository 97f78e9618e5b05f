// The `x-pd-override` request header (benchmarks and tests), honoured only when the config
// allows overrides.
import { GatewayError } from "../core/errors.js";
import type { PdOverride } from "../pd/plan.js";

export function pdOverrideOf(headers: Headers, allowed: boolean): PdOverride | undefined {
  const v = headers.get("x-pd-override");
  if (!v || !allowed) return undefined;
  if (v === "force-prefill" || v === "force-relay") return v;
  throw new GatewayError("invalid_override", 400, "x-pd-override: must be force-prefill or force-relay", undefined, "x-pd-override");
}
