// Typed errors of the edge tokenizer. Each carries a machine-readable `kind` so the pipeline can
// pick the HTTP status (bundle problems are the engine's fault: 502; template and parameter
// problems are the client's: 400) without parsing messages, and a message fit to show a client.

export type BundleErrorKind =
  | "sha256_mismatch"
  | "missing_sha256"
  | "not_a_zip"
  | "missing_tokenizer_json"
  | "invalid_file"
  | "too_large"
  | "timeout"
  | "stream_failed";

/** The engine's tokenizer bundle could not be fetched or trusted (answer 502). */
export class TokenizerBundleError extends Error {
  override readonly name = "TokenizerBundleError";
  constructor(
    readonly kind: BundleErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`tokenizer bundle: ${message}`, options);
  }
}

export type ChatTemplateErrorKind =
  /** The template called raise_exception(msg): the chat is not valid for this model. */
  | "raise_exception"
  /** The template uses a Jinja feature the edge renderer lacks; `feature` names it. */
  | "unsupported_feature"
  /** The bundle has no chat template (a base model): nothing to render with. */
  | "no_template"
  /** continue_final_message and the like asked for something the chat cannot give. */
  | "invalid_request";

/** The chat could not be rendered into a prompt (answer 400). */
export class ChatTemplateError extends Error {
  override readonly name = "ChatTemplateError";
  constructor(
    readonly kind: ChatTemplateErrorKind,
    message: string,
    readonly feature?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** An OpenAI request field cannot be mapped onto SamplingParams (answer 400, param = field). */
export class SamplingParamError extends Error {
  override readonly name = "SamplingParamError";
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** A prompt the edge tokenizer will not take on (answer 400, naming the prompt's field):
 *  `run_too_long`, one unbroken run (a pre-token) longer than the tokenizer merges. */
export class TokenizerLimitError extends Error {
  override readonly name = "TokenizerLimitError";
  constructor(
    readonly kind: "run_too_long",
    message: string,
  ) {
    super(message);
  }
}
