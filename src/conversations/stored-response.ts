// What the Responses API keeps per response (issue 29): the response object the client got,
// the conversation that led to it (input items, earlier turns expanded), who may read it, and
// until when. Types only: the store object (response-store-do.ts) and the surface share them.

/** One stored response, as the surface writes it. */
export interface StoredResponseInput {
  id: string;
  /** The API key's owner tag (middleware/auth.ts): only it may read or delete the response. */
  owner: string;
  /** The response object as JSON text (what GET /v1/responses/{id} returns). */
  response: string;
  /** The conversation before this response's output, as JSON text: the input items of every
   *  earlier turn and their outputs, then this request's input. */
  conversation: string;
  /** Time to live from now, in seconds. */
  ttlSecs: number;
}

export interface StoredResponse {
  id: string;
  response: string;
  conversation: string;
  createdAt: number;
  expiresAt: number;
}
