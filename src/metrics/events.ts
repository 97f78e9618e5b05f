// Typed events the request path emits. Emitting is synchronous and never throws: sinks
// buffer or hand off, so metrics can neither block nor break a request.
import type { BreakerState, ConnectorModeName, KvInjection, Leg, SkipReason, Surface } from "../core/types.js";
import type { PolicyName } from "../config/schema.js";

export type { Leg, Surface } from "../core/types.js";

/** One per PD request whose decode leg was established (upstream's success-only PD signals). */
export interface PdDecisionEvent {
  type: "pd_decision";
  model: string;
  surface: Surface;
  connectorMode: ConnectorModeName;
  prefill: "ran" | "skipped";
  /** Why the leg was skipped. */
  skipReason?: SkipReason;
  kvInjection: KvInjection;
  n: number;
  prefillEngine: string;
  decodeEngine: string;
  /** Only when the prefill leg ran. */
  prefillMs?: number;
  /** Only when KV params were injected or relayed to decode. */
  kvTransferMs?: number;
  /** The cluster both engines are in (absent = "default"). */
  cluster?: string;
}

/** Per contacted leg: the engine's outcome as an HTTP status (200 on success). None for a skipped leg. */
export interface EngineOutcomeEvent {
  type: "engine_outcome";
  model: string;
  engine: string;
  leg: Leg;
  status: number;
}

/** NIXL relay expected, the prefill engine returned no handoff (decode recomputes). */
export interface KvTransferFailureEvent {
  type: "kv_transfer_failure";
  model: string;
  prefillEngine: string;
}

/** One per client request, also for failed and cancelled ones. */
export interface RequestEvent {
  type: "request";
  model: string;
  surface: Surface;
  endpoint: string;
  backend: "pd" | "regular" | "none";
  streaming: boolean;
  status: number;
  errorCode?: string;
  durationMs: number;
}

/** Time to first token and generation timing of a streamed response. */
export interface StreamCompleteEvent {
  type: "stream_complete";
  model: string;
  surface: Surface;
  endpoint: string;
  ttftMs?: number;
  tpotMs?: number;
  generationMs: number;
  inputTokens?: number;
  outputTokens: number;
}

/** A circuit breaker changed state (pd-reference 7.4). `model` is the model whose request
 *  reported the outcome that moved it (engines are configured per model pool). */
export interface BreakerTransitionEvent {
  type: "breaker_transition";
  model: string;
  engine: string;
  from: BreakerState;
  to: BreakerState;
}

/** A selection policy picked an engine for one leg of a request. */
export interface EngineSelectionEvent {
  type: "engine_selection";
  model: string;
  engine: string;
  leg: Leg;
  /** The pool's policy (config `policy.<role>`). */
  policy: PolicyName;
  /** The engine's cluster (absent = "default"). */
  cluster?: string;
}

export type GatewayEvent =
  | PdDecisionEvent
  | EngineOutcomeEvent
  | KvTransferFailureEvent
  | RequestEvent
  | StreamCompleteEvent
  | BreakerTransitionEvent
  | EngineSelectionEvent;

export interface EventSink {
  emit(event: GatewayEvent): void;
}

/** A sink that keeps events in memory (tests, benchmarks). */
export class MemorySink implements EventSink {
  readonly events: GatewayEvent[] = [];
  emit(event: GatewayEvent): void {
    this.events.push(event);
  }
}
