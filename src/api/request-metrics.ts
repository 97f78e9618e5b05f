// The one writer of a client request's `request` and `stream_complete` events, for every
// surface. Surfaces only observe their stream (when output went out, how many tokens); the
// arithmetic and the definitions live here, once:
//
// - TTFT: from the request's arrival at the gateway (GatewayContext.arrivedAt, stamped before
//   any middleware) to when the first output token or text was sent to the client: the first
//   SSE data event of an OpenAI stream (vLLM's first event comes with the first token), the
//   first Generate chunk carrying token ids.
// - TPOT: metrics/tpot.ts, between the first and the last output sent, per sequence.
// - generationMs and durationMs: from the arrival to the end of the stream / of the request.
// - outputTokens: the usage the stream reported (core/usage.ts for VllmEngine frames, the
//   engine's usage chunk over HTTP), else the output pieces counted on the way; inputTokens:
//   the reported prompt tokens, else the job's prompt length when it is exact (token ids).
//
// Emitting goes through the metrics EventSink: it never throws and never blocks.
import type { Surface } from "../core/types.js";
import type { EventSink } from "../metrics/events.js";
import { tpotMs } from "../metrics/tpot.js";
import type { GenerationJob, JobEndpoint } from "../pd/job.js";

/** What a surface observed of the output it streamed to the client. */
export interface OutputStats {
  /** When the first output token or text was sent (TTFT). */
  firstOutputAt: number | undefined;
  /** When the last one was sent (TPOT). */
  lastOutputAt: number | undefined;
  outputTokens: number;
  /** Prompt tokens the engine reported, if it did. */
  inputTokens: number | undefined;
}

export type RequestBackend = "pd" | "regular" | "none";

export class RequestMetrics {
  private model = "";
  private streamed: boolean;
  private sequences = 1;
  private exactPromptTokens: (() => number | undefined) | undefined;
  private backendUsed: RequestBackend = "none";
  private ended = false;
  private readonly now: () => number;

  constructor(
    private readonly events: EventSink,
    private readonly surface: Surface,
    private readonly endpoint: JobEndpoint,
    private readonly arrivedAt: number,
    o: { streamed?: boolean; now?: () => number } = {},
  ) {
    this.streamed = o.streamed ?? false;
    this.now = o.now ?? Date.now;
  }

  /** The model, as soon as the request names it (a request refused before is recorded with ""). */
  named(model: string, streamed: boolean): void {
    this.model = model;
    this.streamed = streamed;
  }

  /** The job, once built: its model, output contract, width and prompt length. */
  forJob(job: GenerationJob<unknown>): void {
    this.named(job.model, job.streamed);
    this.sequences = job.fanout;
    this.exactPromptTokens = () => {
      const t = job.promptTokens();
      return t.exact ? t.count : undefined;
    };
  }

  backend(b: "pd" | "regular"): void {
    this.backendUsed = b;
  }

  /** The request's end, once: its `request` event, and for a stream sent whole (status
   *  200 with `stream` given) its `stream_complete`. Later calls are ignored. */
  end(status: number, errorCode?: string, stream?: OutputStats): void {
    if (this.ended) return;
    this.ended = true;
    const at = this.now();
    this.events.emit({
      type: "request",
      model: this.model,
      surface: this.surface,
      endpoint: this.endpoint,
      backend: this.backendUsed,
      streaming: this.streamed,
      status,
      ...(errorCode !== undefined ? { errorCode } : {}),
      durationMs: at - this.arrivedAt,
    });
    if (stream && status === 200 && this.streamed) this.streamComplete(stream, at);
  }

  private streamComplete(s: OutputStats, at: number): void {
    const inputTokens = s.inputTokens ?? this.exactPromptTokens?.();
    const tpot = s.firstOutputAt !== undefined && s.lastOutputAt !== undefined ? tpotMs(s.firstOutputAt, s.lastOutputAt, s.outputTokens, this.sequences) : undefined;
    this.events.emit({
      type: "stream_complete",
      model: this.model,
      surface: this.surface,
      endpoint: this.endpoint,
      ...(s.firstOutputAt !== undefined ? { ttftMs: s.firstOutputAt - this.arrivedAt } : {}),
      ...(tpot !== undefined ? { tpotMs: tpot } : {}),
      generationMs: at - this.arrivedAt,
      ...(inputTokens !== undefined ? { inputTokens } : {}),
      outputTokens: s.outputTokens,
    });
  }
}
