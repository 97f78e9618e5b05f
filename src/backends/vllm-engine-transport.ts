// The VllmEngine leg transport (Connect or gRPC-web over fetch): encodes a LegSpec onto the
// client's GenerateRequest, streams GenerateResponse frames, and has an Abort RPC.
import { Code, ConnectError } from "@connectrpc/connect";
import type { GenerateRequest, GenerateResponse } from "../gen/vllm_engine_pb.js";
import { httpStatusForCode } from "../core/errors.js";
import { LegFailure, type EngineCall, type Harvester, type LegTransport } from "../core/leg-transport.js";
import type { EngineTarget } from "../core/types.js";
import { encodeGenerateLeg } from "./generate-request.js";
import type { VllmEngineClient } from "./vllm-engine.js";

const ABORT_TIMEOUT_MS = 5_000;

export function vllmEngineTransport(clientOf: (engine: EngineTarget) => VllmEngineClient): LegTransport<GenerateRequest, GenerateResponse> {
  return {
    traits: { typedBootstrap: true, pixelsOnPrefillOnly: true },
    start(engine, req, spec): EngineCall<GenerateResponse> {
      const controller = new AbortController();
      const frames = clientOf(engine).generate(encodeGenerateLeg(req, spec), { signal: controller.signal })[Symbol.asyncIterator]();
      return {
        next: () => frames.next().catch((err: unknown) => Promise.reject(rpcFailure(err))),
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

/** Codes connect-es raises itself when an engine's bytes cannot be decoded: a broken engine,
 *  not a client mistake, so never passed on as invalid_argument. */
const DECODE_FAILURE_CODES: ReadonlySet<Code> = new Set([Code.InvalidArgument, Code.Internal, Code.DataLoss, Code.Unknown]);

function rpcFailure(err: unknown): LegFailure {
  const ce = ConnectError.from(err);
  // An error the engine sent carries its metadata; one connect-es raised while reading the
  // response (a garbled or truncated frame) has none.
  const fromEngine = ce.metadata.has("content-type") || ce.metadata.has("grpc-status") || ce.metadata.has("grpc-message");
  if (!fromEngine && DECODE_FAILURE_CODES.has(ce.code) && /parse|decode|premature|envelope|invalid|unexpected|protobuf|wire/i.test(ce.rawMessage)) {
    return new LegFailure("malformed", 502, ce.rawMessage, Code.Unavailable);
  }
  return new LegFailure("rpc", httpStatusForCode(ce.code), ce.rawMessage, ce.code);
}
