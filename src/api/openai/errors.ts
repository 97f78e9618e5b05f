// The OpenAI surface's SSE error event is the shared renderer's (src/errors/openai.ts, with
// the JSON shape middleware, onError and admin answer in); named here for the relays.
export { sseErrorEvent } from "../../errors/openai.js";
