// Which engines are serving which request id in this isolate, so a client's Abort reaches
// both legs of its request. Entries leave when the request ends.
import type { VllmEngineClient } from "./vllm-engine.js";

export interface InFlightEngine {
  name: string;
  client: VllmEngineClient;
}

const inFlight = new Map<string, InFlightEngine[]>();

export function trackInFlight(requestId: string, engines: InFlightEngine[]): () => void {
  inFlight.set(requestId, engines);
  return () => {
    if (inFlight.get(requestId) === engines) inFlight.delete(requestId);
  };
}

export function enginesServing(requestId: string): InFlightEngine[] | undefined {
  return inFlight.get(requestId);
}

export function inFlightCount(): number {
  return inFlight.size;
}
