// What every scenario gets: the counts of the chosen profile, the running targets, and a
// progress printer.
import type { Target } from "./http.js";
import type { NodePeer, SimProcess, WorkerTarget } from "./targets.js";

export interface Counts {
  /** Repeats of each side-by-side measurement; figures are medians over them. */
  repeats: number;
  /** Concurrency-1 rounds per repeat (each round: one request to every target). */
  latencyRounds: number;
  throughputSeconds: number;
  throughputConnections: number;
  /** Requests per CPU-per-request case. */
  cpuRequests: number;
  /** Requests per streaming CPU case (each a 256-token stream). */
  cpuStreamRequests: number;
  cpuConcurrency: number;
  /** 256-token streams per target per repeat (unpaced), and with the default token pacing. */
  streams: number;
  pacedStreams: number;
  /** Requests per fan-out cell per repeat. */
  fanoutRequests: number;
  memoryStreams: number[];
  scalingRounds: number;
  scalingCpuRequests: number;
  profileRequests: number;
  /** Extra cold starts of wrangler dev (beyond the ones the run needs anyway). */
  extraStarts: number;
}

export const QUICK: Counts = {
  repeats: 3,
  latencyRounds: 150,
  throughputSeconds: 3,
  throughputConnections: 32,
  cpuRequests: 800,
  cpuStreamRequests: 150,
  cpuConcurrency: 8,
  streams: 6,
  pacedStreams: 2,
  fanoutRequests: 3,
  memoryStreams: [100, 500],
  scalingRounds: 20,
  scalingCpuRequests: 300,
  profileRequests: 1000,
  extraStarts: 0,
};

export const FULL: Counts = {
  repeats: 5,
  latencyRounds: 1000,
  throughputSeconds: 10,
  throughputConnections: 32,
  cpuRequests: 5000,
  cpuStreamRequests: 600,
  cpuConcurrency: 8,
  streams: 30,
  pacedStreams: 6,
  fanoutRequests: 8,
  memoryStreams: [100, 500],
  scalingRounds: 60,
  scalingCpuRequests: 1500,
  profileRequests: 5000,
  extraStarts: 2,
};

export interface BenchContext {
  counts: Counts;
  sim: SimProcess;
  /** The sim engine `name` itself, as a target. */
  direct(engine: string): Target;
  gateway: WorkerTarget;
  passthrough: WorkerTarget;
  portkey: NodePeer;
  /** wrangler.toml of the pass-through Worker's copy, for starting more of them. */
  passthroughConfig: string;
  /** wrangler.toml of the relay-floor Worker's copy (bench/relay-floor-worker). */
  relayFloorConfig: string;
  log(msg: string): void;
}
