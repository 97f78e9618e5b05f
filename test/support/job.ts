// A generation job for tests that drive the executor directly (below the surfaces, which
// build theirs with api/job.ts): every field the job requires, with defaults for the ones a
// test does not care about.
import type { GenerationJob } from "../../src/pd/job.js";

type Required<P> = Pick<GenerationJob<P>, "model" | "surface" | "endpoint" | "payload">;

export function testJob<P>(j: Required<P> & Partial<GenerationJob<P>>): GenerationJob<P> {
  return {
    prompt: () => ({ text: "" }),
    promptTokens: () => ({ count: 0, exact: false }),
    routingKey: undefined,
    fanout: 1,
    hasMmInputs: false,
    override: undefined,
    ids: { client: "test", engine: "test", owner: "open" },
    streamed: true,
    ...j,
  };
}
