// Sends the unary Abort RPC to an engine, off the response path. Failures are logged, never
// thrown: the request is already over for the client.
import type { VllmEngineClient } from "../backends/vllm-engine.js";

const ABORT_TIMEOUT_MS = 5_000;

export function sendAbort(client: VllmEngineClient, requestId: string, engineName: string): Promise<void> {
  return client
    .abort({ requestIds: [requestId] }, { timeoutMs: ABORT_TIMEOUT_MS })
    .then(() => undefined)
    .catch((err: unknown) => {
      console.warn(JSON.stringify({ msg: "abort rpc failed", engine: engineName, requestId, error: String(err) }));
    });
}

/** Resolves after `ms`, or never if ms is not finite. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
