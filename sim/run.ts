// One generation request inside an engine, surface-agnostic: fault, KV pull or prompt compute,
// then one timer per decode step for all n samples. The gRPC and OpenAI surfaces turn its events
// into their wire forms. Ending (finish, Abort, client cancel, failure) is settled in one place
// so the KV bookkeeping (release, abort-during-pull, pins) is identical on both surfaces.
import { Code } from "@connectrpc/connect";
import { EventQueue, sleep, untilAborted } from "./async.js";
import { parseCode } from "./faults.js";
import { classifyKv, legOf, nixlKey, type KvIntent, type KvParams, type PullTarget } from "./kv-params.js";
import { detokenize, naturalLengthFromHash, promptHash, tokenAt } from "./tokens.js";
import type { FaultBook } from "./faults.js";
import type { Handoff, KvStore } from "./kv-store.js";
import type { EngineConfig } from "./spec.js";
import type { Stats } from "./stats.js";
import type { SimFault } from "./types.js";
import type { Script } from "./script.js";

export interface GenInput {
  requestId: string;
  promptIds: number[];
  n: number;
  maxTokens: number;
  minTokens: number;
  stop: string[];
  stopTokenIds: number[];
  ignoreEos: boolean;
  seed: number | undefined;
  kvParams: KvParams | undefined;
  /** The request's own `x-sim-fault`, if any. */
  fault: SimFault | undefined;
  /** GenerateRequest.data_parallel_rank when present: picks the `{id}_dp{rank}` engine id. */
  dataParallelRank?: number;
  /** A constrained reply's length: every sample ends (EOS) after it, as a finished grammar does. */
  replyLength?: number;
  /** Output tokens fixed in advance (a scripted or constrained reply, sim/script.ts), cycled;
   *  without one, tokens are sampled from the prompt's hash and spelled by detokenize. */
  script?: Script;
}

export type FinishReason = "stop" | "length" | "abort";

export type GenEvent =
  | { type: "token"; index: number; tokenId: number; text: string; completionTokens: number; cachedTokens: number; final: boolean }
  | {
      type: "complete";
      index: number;
      outputIds: number[];
      /** The sample's whole output text, before any stop-string cut. */
      text: string;
      finishReason: FinishReason;
      cachedTokens: number;
      matchedStopStr?: string;
      matchedTokenId?: number;
      kvTransferParams?: KvParams;
    }
  | { type: "error"; code: Code; message: string; httpStatus?: number; sse?: "error-event" | "reset" | "no-done" };

/** What a run needs from its engine. */
export interface RunHost {
  readonly cfg: EngineConfig;
  readonly stats: Stats;
  readonly kv: KvStore;
  readonly faults: FaultBook;
  /** This engine's HTTP port: the NIXL side channel a decode engine pulls from. */
  readonly httpPort: number;
  /** POSTs {target}/pull; true iff the producer served it. Never rejects. */
  pullKv(target: PullTarget): Promise<boolean>;
  /** POSTs {target}/release (transfer rejected). Never rejects. */
  releaseKv(target: PullTarget): Promise<void>;
  register(run: Run): void;
  unregister(run: Run): void;
}

type Phase = "queued" | "pulling" | "computing" | "decoding";
type Outcome = "finished" | "aborted" | "cancelled" | "failed";

interface Sample {
  index: number;
  tokens: number[];
  text: string;
  natural: number;
  cachedTokens: number;
  done: boolean;
}

export class Run {
  readonly events = new EventQueue<GenEvent>();
  readonly intent: KvIntent;
  phase: Phase = "queued";
  private readonly controller = new AbortController();
  private outcome: Outcome | undefined;
  private pullStarted = false;
  private pullInFlight = false;
  private samples: Sample[] = [];
  private countedDecode = false;
  /** Handoffs this run pinned; freed again if it ends without finishing. */
  private readonly pins: Handoff[] = [];

  constructor(
    private readonly host: RunHost,
    readonly input: GenInput,
  ) {
    this.intent = classifyKv(host.cfg, input.kvParams, input.requestId, input.promptIds.length);
  }

  get requestId(): string {
    return this.input.requestId;
  }

  get ended(): boolean {
    return this.outcome !== undefined;
  }

  /** KV blocks this request occupies while it runs (prompt + generated so far). */
  get activeBlocks(): number {
    if (this.phase === "queued" || this.phase === "pulling") return 0;
    const generated = this.samples.reduce((m, s) => Math.max(m, s.tokens.length), 0);
    return Math.ceil((this.input.promptIds.length + generated) / this.host.cfg.blockSize);
  }

  start(): void {
    this.host.register(this);
    this.execute().catch((err: unknown) => {
      void this.settle("failed", { code: Code.Internal, message: `sim engine error: ${String(err)}` });
    });
  }

  /** Abort RPC: the stream ends with finish_reason "abort" for every unfinished sample. */
  abort(): Promise<void> {
    return this.settle("aborted");
  }

  /** The client went away (transport cancel / HTTP disconnect). */
  cancel(): Promise<void> {
    return this.settle("cancelled");
  }

  /** The fault applied to this request, once it started. */
  fault: SimFault | undefined;

  private get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  private async execute(): Promise<void> {
    const { cfg, stats, faults } = this.host;
    const input = this.input;
    const fault = faults.take(legOf(input.kvParams), input.fault);
    this.fault = fault;
    if (fault?.failStart) {
      const code = parseCode(fault.failStart.code) ?? Code.Unavailable;
      const message = fault.failStart.message ?? `injected failStart (${fault.failStart.code})`;
      return this.settle("failed", { code, message, httpStatus: fault.failStart.httpStatus });
    }
    if (fault?.hang) {
      // Modelled as stuck in the scheduler's waiting queue: before any KV pull.
      await untilAborted(this.controller.signal);
      return;
    }

    const promptLen = input.promptIds.length;
    const hash = promptHash(input.promptIds);
    this.samples = Array.from({ length: input.n }, (_, index) => ({
      index, tokens: [], text: "", natural: fault?.eosAfter ?? input.replyLength ?? naturalLengthFromHash(hash, input.seed, index), cachedTokens: 0, done: false,
    }));

    if (this.intent.kind === "pull") {
      // Each child pulls on its own, in index order: the first consumes the single-consumer
      // handoff, every later sibling is refused and recomputes (the n>1 hazard).
      let anyPulled = false;
      for (const s of this.samples) {
        const ok = await this.pull(this.intent.target);
        if (this.stopped) return;
        if (ok) {
          anyPulled = true;
          s.cachedTokens = promptLen;
          stats.add("kvPullsCompleted");
          continue;
        }
        stats.add("kvRecomputes");
        if (anyPulled) stats.add("kvSiblingHazards");
        if (!(await this.computePrompt())) return;
      }
    } else {
      if (!(await this.computePrompt())) return;
      if (this.intent.kind === "mooncake-produce") {
        this.pins.push(this.host.kv.pin(this.intent.key, input.requestId, pinEngineId(cfg, input.dataParallelRank), Math.ceil(promptLen / cfg.blockSize)));
      }
    }
    await this.decode(hash, fault);
  }

  /** Prompt forward pass; false if the run was stopped meanwhile. */
  private async computePrompt(): Promise<boolean> {
    const { cfg, stats } = this.host;
    const len = this.input.promptIds.length;
    this.phase = "computing";
    stats.add("prefillComputations");
    stats.add("promptTokensComputed", len);
    return sleep(cfg.latency.perPromptTokenMs * len, this.controller.signal);
  }

  private async pull(target: PullTarget): Promise<boolean> {
    const lat = this.host.cfg.latency;
    this.phase = "pulling";
    this.pullStarted = true;
    this.pullInFlight = true;
    try {
      // The transfer itself (RDMA read / Mooncake transfer), then the completion notice that
      // lets the producer free its blocks: an abort inside this window leaves them pinned.
      if (!(await sleep(lat.pullSetupMs + lat.perBlockPullMs * target.blocks, this.controller.signal))) return false;
      if (target.baseUrl === undefined) return false;
      return await this.host.pullKv(target);
    } finally {
      this.pullInFlight = false;
    }
  }

  private async decode(hash: number, fault: SimFault | undefined): Promise<void> {
    const { cfg, stats } = this.host;
    const input = this.input;
    this.phase = "decoding";
    let steps = 0;
    let handoff: KvParams | undefined;
    while (this.samples.some((s) => !s.done)) {
      if (fault?.failMidStream && steps >= fault.failMidStream.afterTokens) {
        const m = fault.failMidStream;
        return this.settle("failed", {
          code: parseCode(m.code) ?? Code.Internal,
          message: m.message ?? `injected failMidStream after ${m.afterTokens} tokens (${m.code})`,
          ...(m.sse ? { sse: m.sse } : {}),
        });
      }
      if (!(await sleep(cfg.latency.perOutputTokenMs, this.controller.signal))) return;
      steps++;
      for (const s of this.samples) {
        if (s.done) continue;
        const pos = s.tokens.length;
        const script = input.script;
        const tok = script ? script.ids[pos % script.ids.length]! : tokenAt(hash, input.seed, s.index, pos);
        const piece = script ? script.texts[pos % script.texts.length]! : detokenize([tok]);
        s.tokens.push(tok);
        s.text += piece;
        if (s.tokens.length === 2 && !this.countedDecode) {
          this.countedDecode = true;
          stats.add("decodeRequests");
        }
        const fin = this.finishOf(s, tok);
        this.events.push({
          type: "token", index: s.index, tokenId: tok, text: piece, completionTokens: s.tokens.length,
          cachedTokens: s.cachedTokens, final: fin !== undefined,
        });
        if (!fin) continue;
        s.done = true;
        let kvTransferParams: KvParams | undefined;
        if (fin.reason === "length" && this.intent.kind === "nixl-produce" && handoff === undefined) {
          // vLLM's NIXL producer hands off only a length-capped request: pin, return params.
          handoff = this.pinNixl();
          kvTransferParams = handoff;
        }
        this.events.push({
          type: "complete", index: s.index, outputIds: [...s.tokens], text: s.text, finishReason: fin.reason,
          cachedTokens: s.cachedTokens, matchedStopStr: fin.stopStr, matchedTokenId: fin.tokenId, kvTransferParams,
        });
      }
    }
    await this.settle("finished");
  }

  /** vLLM's stop checker order: EOS (after min_tokens), stop token ids, stop strings, length. */
  private finishOf(s: Sample, tok: number): { reason: FinishReason; stopStr?: string; tokenId?: number } | undefined {
    const input = this.input;
    const count = s.tokens.length;
    if (count >= input.minTokens) {
      if (!input.ignoreEos && count >= Math.max(s.natural, input.minTokens)) return { reason: "stop" };
      if (input.stopTokenIds.includes(tok)) return { reason: "stop", tokenId: tok };
      const stopStr = input.stop.find((st) => st !== "" && s.text.includes(st));
      if (stopStr !== undefined) return { reason: "stop", stopStr };
    }
    if (count >= input.maxTokens) return { reason: "length" };
    return undefined;
  }

  private pinNixl(): KvParams {
    const { cfg, kv } = this.host;
    const engineId = pinEngineId(cfg, this.input.dataParallelRank);
    const h = kv.pin(nixlKey(this.requestId), this.requestId, engineId, Math.ceil(this.input.promptIds.length / cfg.blockSize));
    this.pins.push(h);
    return {
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: h.blockIds,
      remote_engine_id: engineId,
      remote_request_id: this.requestId,
      remote_host: "127.0.0.1",
      remote_port: this.host.httpPort,
      tp_size: 1,
    };
  }

  /** The single place a run ends. Idempotent; the first outcome wins. */
  private async settle(outcome: Outcome, error?: Omit<Extract<GenEvent, { type: "error" }>, "type">): Promise<void> {
    if (this.outcome !== undefined) return;
    this.outcome = outcome;
    const { stats } = this.host;
    const stoppedDuringPull = this.pullInFlight;
    this.controller.abort();
    this.host.unregister(this);
    if (outcome === "cancelled") stats.add("streamsCancelled");
    // A request stopped while running never completed its handoff, so its blocks go back at
    // once. Only a finished request's handoff outlives it (and ignores a later Abort).
    if (outcome !== "finished") for (const h of this.pins) this.host.kv.freeHandoff(h);
    let release: Promise<void> | undefined;
    if (outcome !== "finished" && this.intent.kind === "pull") {
      if (stoppedDuringPull && outcome !== "failed") {
        // The engine hazard the gateway's deferred decode abort exists for.
        stats.add("abortsDuringPull");
      } else if (!this.pullStarted) {
        // As the servicer's notify_kv_transfer_request_rejected: free the producer's blocks now.
        stats.add("kvReleasesSent");
        release = this.host.releaseKv(this.intent.target);
      }
    }
    if (outcome === "aborted") {
      for (const s of this.samples) {
        if (s.done) continue;
        s.done = true;
        this.events.push({ type: "complete", index: s.index, outputIds: [...s.tokens], text: s.text, finishReason: "abort", cachedTokens: s.cachedTokens });
      }
      if (this.samples.length === 0) {
        // Aborted before any sample existed (queued / hung): one abort frame per requested sample.
        for (let index = 0; index < this.input.n; index++) {
          this.events.push({ type: "complete", index, outputIds: [], text: "", finishReason: "abort", cachedTokens: 0 });
        }
      }
    }
    // Let the producer count the rejection before the client sees the outcome.
    if (release) await release;
    if (error) this.events.push({ type: "error", ...error });
    this.events.close();
  }
}

/** The KV engine id a handoff is pinned under. With data parallelism each rank's core serves
 *  `{id}_dp{rank}`, which is what a DP-aware gateway mints; unpinned requests land on rank 0. */
export function pinEngineId(cfg: EngineConfig, dpRank: number | undefined): string {
  const base = cfg.kvEngineId !== "" ? cfg.kvEngineId : cfg.name;
  return cfg.dataParallelSize > 1 ? `${base}_dp${dpRank ?? 0}` : base;
}
