// The response header that carries a failed request's stable gateway code, in every protocol
// (Connect error metadata, gRPC-web trailers-only headers, OpenAI responses).
export const ERROR_CODE_HEADER = "x-gateway-error-code";
