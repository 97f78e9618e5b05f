// A byte pipe the runtime reads from natively: workerd's IdentityTransformStream (no JS step
// on the reading side), else a plain TransformStream (Node, for unit tests).
export function identityPipe(): { readable: ReadableStream; writable: WritableStream<Uint8Array> } {
  return typeof IdentityTransformStream === "function" ? new IdentityTransformStream() : new TransformStream<Uint8Array, Uint8Array>();
}
