// fetch for engine clients inside workerd: connect-web asks for redirect "error", which
// workerd rejects, and an engine redirect must never be followed anyway (URLs stay as
// configured), so "manual" is used and a redirect surfaces as an error status.
export const engineFetch: typeof fetch = (input, init) => fetch(input, { ...init, redirect: "manual" });
