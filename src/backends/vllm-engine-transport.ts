// The VllmEngine leg transport (Connect or gRPC-web over fetch): encodes a LegSpec onto the
// client's GenerateRequest, streams GenerateResponse frames, and has an Abort RPC.
import type { GenerateRequest, GenerateResponse } from "../gen/vllm_engine_pb.js";
import type { EngineCall, Harvester, LegTransport } from "../core/leg-transport.js";
import type { EngineTarget } from "../core/types.js";
// Loaded with the first call (it needs the generated descriptors): keeps protobuf out of the
// isolate's start-up when only OpenAI HTTP engines are served.
type Encoder = typeof import("./generate-request.js") & typeof import("./vllm-engine-failures.js");
let encoder: Encoder | undefined;
const loadEncoder = async (): Promise<Encoder> => {
  if (encoder) return encoder;
  const [req, failures] = await Promise.all([import("./generate-request.js"), import("./vllm-engine-failures.js")]);
  return (encoder = { ...req, ...failures });
};
import type { VllmEngineClient } from "./vllm-engine.js";

const ABORT_TIMEOUT_MS = 5_000;

export function vllmEngineTransport(clientOf: (engine: EngineTarget) => VllmEngineClient): LegTransport<GenerateRequest, GenerateResponse> {
  return {
    traits: { typedBootstrap: true, pixelsOnPrefillOnly: true },
    start(engine, req, spec): EngineCall<GenerateResponse> {
      const controller = new AbortController();
      const open = (e: Encoder) => clientOf(engine).generate(e.encodeGenerateLeg(req, spec), { signal: controller.signal })[Symbol.asyncIterator]();
      let frames = encoder ? open(encoder) : undefined;
      const opening = frames ? undefined : loadEncoder().then((e) => (frames = open(e)));
      const next = (): Promise<IteratorResult<GenerateResponse>> => (frames ? frames.next() : opening!.then((f) => f.next()));
      return {
        // A frame can fail only once the call is open, and so the modules are in.
        next: () => next().catch((err: unknown) => Promise.reject(encoder ? encoder.rpcFailure(err) : err)),
        close: () => controller.abort(),
        headers: () => undefined,
      };
    },
    async abort(engine, requestId) {
      await clientOf(engine).abort({ requestIds: [requestId] }, { timeoutMs: ABORT_TIMEOUT_MS });
    },
    harvester(): Harvester<GenerateResponse> {
      let handoff: string | undefined;
      return {
        // The last non-empty handoff wins; "" counts as absent (pd-reference 1.2).
        push(frame) {
          const json = frame.response.case === "complete" ? frame.response.value.kvTransferParamsJson : undefined;
          if (json) handoff = json;
        },
        result: () => handoff,
      };
    },
  };
}
