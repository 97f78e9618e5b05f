// How the Worker reaches the registry object: one object named "global", so every isolate and
// the cron see the same engines and state. A type-only import keeps this module (and
// snapshot.ts) loadable in Node unit tests, where "cloudflare:workers" does not exist.
import type { EngineRegistry } from "./registry-do.js";

export const REGISTRY_OBJECT_NAME = "global";

export type RegistryNamespace = DurableObjectNamespace<EngineRegistry>;
export type RegistryStub = DurableObjectStub<EngineRegistry>;

/** A fresh stub per call: stubs are cheap, and one created for another request's I/O context
 *  is not something to rely on. */
export function registryStub(ns: RegistryNamespace): RegistryStub {
  return ns.get(ns.idFromName(REGISTRY_OBJECT_NAME));
}
