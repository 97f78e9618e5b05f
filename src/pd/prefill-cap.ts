// The prefill cap: what the prefill leg samples, whatever the client asked for, on every
// transport. A NIXL producer hands its KV over only for a request that finished length-capped
// (vLLM nixl_connector.py `request_finished`: any other status returns no kv_transfer_params
// and frees the blocks), and vLLM's stop checker tests EOS and stop token ids before the
// length cap. So the prefill leg samples one token with EOS ignored and no stop strings or
// stop token ids; the client's values go to decode only. One sample (the handoff is
// single-consumer), not streamed (it is drained), no min_tokens (it would refuse a one-token
// cap), and no logprobs of either kind: the one token is thrown away, and prompt logprobs
// cost a pass over the whole vocabulary per prompt token. Sampling fields that shape the
// token (temperature, seed, constraints, penalties) and everything that shapes the prompt
// stay as the client sent them. The transports write it (backends/generate-request.ts,
// backends/openai-bodies.ts); pd-reference 2.4 and 6, and smg's
// `sanitize_sampling_for_prefill`, vLLM's toy_proxy_server.py for the HTTP form.
import type { LegSampling } from "../core/leg-transport.js";

export function prefillCap(): LegSampling {
  return { maxTokens: 1, minTokens: 0, n: 1, ignoreEos: true, stop: [], stopTokenIds: [], stream: false };
}
