// Shapes shared by the registry Durable Object, its callers (admin API, per-isolate snapshot,
// cron) and the tests. Plain data only: everything here crosses the Durable Object RPC
// boundary by structured clone.
import type { LoadedConfig } from "../config/load.js";
import type { EngineRole, EngineTransport, GatewayConfig } from "../config/schema.js";
import type { Breaker, BreakerSettings, BreakerState } from "./breaker.js";
import type { EngineHealth, HealthStatus } from "./health-state.js";

export const ENGINE_ROLES = ["prefill", "decode", "encode", "regular"] as const satisfies readonly EngineRole[];
export type RegistryStatus = "active" | "draining";

/** Per-engine settings an operator may give instead of what the engine reports. */
export interface EngineOverrides {
  kv_connector?: string;
  kv_engine_id?: string;
  dp_rank?: number;
  dp_size?: number;
  bootstrap_port?: number;
  /** The Worker binding (Workers VPC) every request to the engine goes through. */
  binding?: string;
  /** The engine's cluster (KV-transfer domain); absent = "default". */
  cluster?: string;
}

/** What registration learned from the engine (GetModelInfo + GetServerInfo, or /v1/models),
 *  flattened to scalars and arrays; informational, overrides never come from here. */
export type DiscoveredMeta = Record<string, string | number | boolean | string[] | number[]>;

/** An engine added at run time through the admin API. */
export interface RegistryEngine extends EngineOverrides {
  /** Unique across registry and config engines: the engine's name in metrics, health and breakers. */
  id: string;
  model: string;
  role: EngineRole;
  /** Normalized base URL (no trailing slash). */
  url: string;
  transport: EngineTransport;
  labels: Record<string, string>;
  status: RegistryStatus;
  discovered: DiscoveredMeta;
  /** ISO 8601. */
  created_at: string;
  updated_at: string;
}

/** What the admin API hands the object to store (it stamps status and times). */
export type NewRegistryEngine = Omit<RegistryEngine, "status" | "created_at" | "updated_at">;

/** The config the object needs: which config engines to probe, and the thresholds. */
export type RegistryConfig = Pick<LoadedConfig, "models" | "health" | "breaker">;
export type HealthConfig = GatewayConfig["health"];

/** One engine to probe. */
export interface ProbeTarget {
  name: string;
  url: string;
  transport: EngineTransport;
  /** The Worker binding its requests go through (Workers VPC), if any. */
  binding?: string;
}

/** The part of the config the object keeps for its alarm (which has no caller to ask). */
export interface RegistryPlan {
  health: HealthConfig;
  breaker: BreakerSettings;
  configEngines: ProbeTarget[];
}

/** Everything an isolate routes with: the registry engines and the shared state. */
export interface RegistrySnapshot {
  unchanged?: false;
  /** Random per storage lifetime, so a version number is never compared across a wipe. */
  epoch: string;
  /** Bumped on every change of engines, health or breakers. */
  version: number;
  engines: RegistryEngine[];
  health: Record<string, EngineHealth>;
  breakers: Record<string, Breaker>;
}
export type SnapshotAnswer = RegistrySnapshot | { unchanged: true; epoch: string; version: number };

/** One finished engine attempt, as the request path saw it. */
export interface EngineOutcome {
  engine: string;
  /** HTTP-style status of the attempt (failures are the retryable ones, see breaker.ts). */
  status: number;
  /** When it finished (ms); defaults to when it was reported. */
  at?: number;
}

export interface BreakerTransitionReport {
  engine: string;
  from: BreakerState;
  to: BreakerState;
  at: number;
}

export interface HealthTransitionReport {
  engine: string;
  from: HealthStatus;
  to: HealthStatus;
  error?: string;
}

export interface HealthRunReport {
  /** False when health checks are disabled or (ifDue) the last run was too recent. */
  ran: boolean;
  probed: number;
  transitions: HealthTransitionReport[];
  health: Record<string, EngineHealth>;
  version: number;
}

/** One engine as the admin API shows it: the record plus its shared state. */
export interface RegistryEngineState {
  engine: RegistryEngine;
  health?: EngineHealth;
  breaker?: Breaker;
}

/** The shared state of one engine (config or registry), by name. */
export interface SharedEngineState {
  name: string;
  health?: EngineHealth;
  breaker?: Breaker;
}

export type RegistryWriteResult =
  | { ok: true; engine: RegistryEngine }
  | { ok: false; code: "engine_exists" | "engine_not_found"; message: string };
