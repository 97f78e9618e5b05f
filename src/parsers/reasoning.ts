// Reasoning formats: which markers open and close a model's reasoning, and whether a reply
// starts inside it (upstream: smg crates/reasoning_parser, vLLM vllm/reasoning/). A splitter
// turns the text as it arrives into reasoning and normal text, holding back a tail that may
// be a marker's start; tool calls are only looked for in the normal text.
import { firstMarker, partialMarkerTail } from "./text-scan.js";

export interface ReasoningFormat {
  /** The `reasoning_parser` name (config, docs/tools.md). */
  readonly name: string;
  readonly start: string;
  readonly end: string;
  /** Whether the reply starts inside reasoning; `thinking` is the request's choice
   *  (chat_template_kwargs.enable_thinking) when it made one. */
  startsInside(thinking: boolean | undefined): boolean;
  /** Markers that end reasoning without an end marker and belong to the normal text
   *  (Qwen3 may go from reasoning straight to a `<tool_call>`, vLLM qwen3_reasoning_parser). */
  readonly implicitEnds: readonly string[];
}

/** Qwen3: `<think>...</think>`; outside reasoning until `<think>`, unless thinking is on
 *  (the chat template then opens `<think>` in the prompt). */
export const qwen3Reasoning: ReasoningFormat = {
  name: "qwen3",
  start: "<think>",
  end: "</think>",
  startsInside: (thinking) => thinking === true,
  implicitEnds: ["<tool_call>"],
};

/** DeepSeek-R1: the template opens `<think>`, so a reply starts inside reasoning; `</think>`
 *  ends it (a `<think>` the model writes anyway is dropped). */
export const deepseekR1Reasoning: ReasoningFormat = {
  name: "deepseek_r1",
  start: "<think>",
  end: "</think>",
  startsInside: () => true,
  implicitEnds: [],
};

export interface SplitPiece {
  kind: "reasoning" | "normal";
  text: string;
}

type Phase = "before" | "inside" | "after";

export class ReasoningSplitter {
  private phase: Phase;
  private pending = "";

  constructor(
    private readonly format: ReasoningFormat,
    thinking: boolean | undefined,
  ) {
    this.phase = format.startsInside(thinking) ? "inside" : "before";
  }

  /** The settled pieces after `text` arrived; `final` settles everything held. */
  push(text: string, final = false): SplitPiece[] {
    this.pending += text;
    const out: SplitPiece[] = [];
    const add = (kind: SplitPiece["kind"], t: string) => {
      if (t) out.push({ kind, text: t });
    };
    while (this.pending) {
      const t = this.pending;
      if (this.phase === "after") {
        add("normal", t);
        this.pending = "";
        break;
      }
      const f = this.format;
      const kind = this.phase === "inside" ? "reasoning" : "normal";
      const markers = this.phase === "inside" ? [f.end, f.start, ...f.implicitEnds] : [f.start];
      const hit = firstMarker(t, markers);
      if (!hit) {
        const keep = final ? 0 : partialMarkerTail(t, markers);
        add(kind, t.slice(0, t.length - keep));
        this.pending = t.slice(t.length - keep);
        break;
      }
      add(kind, t.slice(0, hit.at));
      if (hit.marker === f.start) {
        this.phase = "inside";
        this.pending = t.slice(hit.at + hit.marker.length);
      } else {
        this.phase = "after";
        this.pending = t.slice(hit.marker === f.end ? hit.at + hit.marker.length : hit.at);
      }
    }
    return out;
  }
}
