// Engine URL checks for run-time registration. An admin API that makes the gateway fetch any
// URL it is given is an SSRF hole, so a URL must be plain http(s) without credentials and its
// host must match `registry.allowed_hosts`; an empty list allows nothing. Pure.

export type UrlCheck =
  | { ok: true; url: string }
  | { ok: false; code: "invalid_engine_url" | "engine_url_not_allowed"; status: 400 | 403; message: string };

interface HostPattern {
  host: RegExp;
  /** Exact port the URL must use (its explicit or default port); undefined = any. */
  port?: string;
}

const DEFAULT_PORTS: Record<string, string> = { "http:": "80", "https:": "443" };

/** "host" or "host:port"; "*" matches one or more characters inside one DNS label (never a
 *  dot), so "*.example.com" does not admit "a.b.example.com" nor "example.com" itself.
 *  Brackets delimit an IPv6 host ("[fd00::1]:8000"). undefined for a malformed pattern. */
export function parseHostPattern(pattern: string): HostPattern | undefined {
  const p = pattern.trim().toLowerCase();
  let host = p;
  let port: string | undefined;
  if (p.startsWith("[")) {
    const end = p.indexOf("]");
    if (end < 0) return undefined;
    host = p.slice(0, end + 1);
    const rest = p.slice(end + 1);
    if (rest !== "") {
      if (!/^:\d{1,5}$/.test(rest)) return undefined;
      port = rest.slice(1);
    }
  } else {
    const colon = p.lastIndexOf(":");
    if (colon >= 0) {
      port = p.slice(colon + 1);
      host = p.slice(0, colon);
      if (!/^\d{1,5}$/.test(port)) return undefined;
    }
  }
  if (host === "" || !/^[a-z0-9.*\-_[\]:]+$/.test(host)) return undefined;
  if (port !== undefined) port = String(Number(port));
  const source = host
    .split("*")
    .map((part) => part.replace(/[.[\]\\^$+?(){}|-]/g, "\\$&"))
    .join("[^.]+");
  return { host: new RegExp(`^${source}$`), port };
}

/** Does a parsed URL's host (and port) match one of the patterns? */
export function hostAllowed(url: URL, patterns: readonly string[]): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port !== "" ? url.port : (DEFAULT_PORTS[url.protocol] ?? "");
  return patterns.some((raw) => {
    const p = parseHostPattern(raw);
    return p !== undefined && p.host.test(host) && (p.port === undefined || p.port === port);
  });
}

/** Validates an engine URL for registration and returns it normalized: lower-case scheme and
 *  host, default port dropped, no trailing slash (a path prefix, e.g. a proxy mount, is kept). */
export function checkEngineUrl(raw: string, allowedHosts: readonly string[]): UrlCheck {
  const bad = (message: string): UrlCheck => ({ ok: false, code: "invalid_engine_url", status: 400, message });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return bad(`url: "${raw}" is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return bad("url: only http and https engine URLs are supported");
  if (url.username !== "" || url.password !== "") return bad("url: must not contain credentials");
  if (url.search !== "" || url.hash !== "") return bad("url: must not have a query or fragment");
  if (!hostAllowed(url, allowedHosts)) {
    const why = allowedHosts.length === 0 ? "registry.allowed_hosts is empty, so no engine may be registered" : "it is not in registry.allowed_hosts";
    return { ok: false, code: "engine_url_not_allowed", status: 403, message: `url: host "${url.host}" is not allowed: ${why}` };
  }
  return { ok: true, url: normalized(url) };
}

function normalized(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
}

/** The normalized form of any URL (for comparing config URLs with registered ones). */
export function normalizeEngineUrl(raw: string): string {
  try {
    return normalized(new URL(raw));
  } catch {
    return raw;
  }
}

/** The health endpoint of an openai-http engine. vLLM serves /health at the server root, so
 *  an OpenAI-style base URL ending in /v1 is probed beside it, not under it. */
export function healthProbeUrl(base: string, endpoint: string): string {
  const b = base.replace(/\/+$/, "").replace(/\/v1$/, "");
  return `${b}${endpoint}`;
}
