// CPU profiles over the V8 inspector protocol (Chrome DevTools Protocol) — the same code for
// the gateway's workerd (wrangler dev's --inspector-port) and a Node peer (--inspect) — and
// a summary: where the sampled time went, by function and by source module.
import { readFile } from "node:fs/promises";
import WebSocket from "ws";

export interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

export interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface CdpTarget {
  webSocketDebuggerUrl?: string;
  type?: string;
  title?: string;
}

class Cdp {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const msg = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
      if (msg.id === undefined) return;
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      if (msg.error) w.reject(new Error(msg.error.message));
      else w.resolve(msg.result);
    });
  }

  static async connect(inspectorPort: number): Promise<Cdp> {
    let list: CdpTarget[] = [];
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await fetch(`http://127.0.0.1:${inspectorPort}/json/list`, { signal: AbortSignal.timeout(10_000) });
        list = (await res.json()) as CdpTarget[];
        break;
      } catch (err) {
        if (attempt >= 3) throw new Error(`inspector on ${inspectorPort}: /json/list: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
    // wrangler dev lists the user Worker; Node lists its one target.
    const target = list.find((t) => t.webSocketDebuggerUrl && !/^(core:|wrangler)/i.test(t.title ?? "")) ?? list.find((t) => t.webSocketDebuggerUrl);
    if (!target?.webSocketDebuggerUrl) throw new Error(`inspector on ${inspectorPort}: no debuggable target in ${JSON.stringify(list)}`);
    const ws = new WebSocket(target.webSocketDebuggerUrl, { perMessageDeflate: false, maxPayload: 1 << 30 });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`inspector on ${inspectorPort}: no WebSocket within 10 s`)), 10_000);
      ws.once("open", () => {
        clearTimeout(timer);
        resolve();
      });
      ws.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    return new Cdp(ws);
  }

  send<T = unknown>(method: string, params: Record<string, unknown> = {}, timeoutMs = 60_000): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`${method}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  close(): void {
    this.ws.close();
  }
}

/** Samples the target's CPU while `work` runs. `intervalUs` is the sampling period. */
export async function profileDuring<T>(inspectorPort: number, work: () => Promise<T>, intervalUs = 500): Promise<{ profile: CpuProfile; result: T }> {
  const cdp = await Cdp.connect(inspectorPort);
  try {
    // workerd streams a Network.* event per subrequest to an attached inspector: switch that
    // off, or the events cost more than the work being profiled.
    await cdp.send("Network.disable", {}, 10_000).catch(() => undefined);
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: intervalUs });
    await cdp.send("Profiler.start");
    let result: T;
    let stopped: { profile: CpuProfile };
    try {
      result = await work();
    } finally {
      stopped = await cdp.send<{ profile: CpuProfile }>("Profiler.stop", {}, 120_000);
    }
    await cdp.send("Profiler.disable").catch(() => undefined);
    return { profile: stopped.profile, result };
  } finally {
    cdp.close();
  }
}

/** The isolate's JS heap after a full GC (MB): what counts against a Workers isolate's
 *  128 MB, unlike the workerd process's resident memory. undefined when the inspector
 *  does not answer. */
export async function heapAfterGcMb(inspectorPort: number): Promise<number | undefined> {
  let cdp: Cdp | undefined;
  try {
    cdp = await Cdp.connect(inspectorPort);
    await cdp.send("Network.disable", {}, 10_000).catch(() => undefined);
    // collectGarbage sometimes never answers through wrangler's inspector proxy: bounded, and
    // the heap is read either way (then it includes garbage, an upper bound).
    await cdp.send("HeapProfiler.enable", {}, 5_000).catch(() => undefined);
    await cdp.send("HeapProfiler.collectGarbage", {}, 5_000).catch(() => undefined);
    const h = await cdp.send<{ usedSize: number }>("Runtime.getHeapUsage", {}, 10_000);
    return Math.round(h.usedSize / 1e5) / 10;
  } catch (err) {
    console.error(`heap: ${(err as Error).message}`);
    return undefined;
  } finally {
    cdp?.close();
  }
}

/** Line ranges of the modules in an esbuild bundle (esbuild marks each with `// path`). */
export interface ModuleMap {
  starts: number[];
  names: string[];
}

export async function bundleModuleMap(bundlePath: string): Promise<ModuleMap> {
  const lines = (await readFile(bundlePath, "utf8")).split("\n");
  const map: ModuleMap = { starts: [], names: [] };
  lines.forEach((l, i) => {
    const m = /^\/\/ ((?:src|node_modules|sim|\.\.)\/\S+)$/.exec(l);
    if (m) {
      map.starts.push(i);
      map.names.push(m[1]!);
    }
  });
  return map;
}

/** A bundle module's group: the npm package, or the source file under src/. */
function groupOf(path: string): string {
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  return nm ? nm[1]! : path;
}

function moduleAt(map: ModuleMap, line: number): string {
  let lo = 0;
  let hi = map.starts.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (map.starts[mid]! <= line) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found < 0 ? "(bundle prelude)" : groupOf(map.names[found]!);
}

export interface FrameShare {
  name: string;
  module: string;
  selfMs: number;
  /** Share of the busy (non-idle) sampled time, percent. */
  pct: number;
}

export interface ProfileSummary {
  sampledMs: number;
  idleMs: number;
  busyMs: number;
  /** "(program)": native code V8 could not attribute to JS (in workerd: the runtime's C++ —
   *  HTTP, sockets, streams, the event loop). */
  programMs: number;
  gcMs: number;
  /** Sampled JS time (busy minus program and GC). */
  jsMs: number;
  topFunctions: FrameShare[];
  byModule: { module: string; selfMs: number; pct: number }[];
}

function urlModule(url: string, line: number, map: ModuleMap | undefined): string {
  if (url === "") return "(V8 builtins / runtime)";
  if (url.startsWith("node-internal:") || url.startsWith("node:")) return "node-internal";
  if (map && /(^|\/)index\.js$/.test(url)) return moduleAt(map, line);
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  return url.replace(/^.*\//, "");
}

export function summarizeProfile(p: CpuProfile, map?: ModuleMap, top = 15): ProfileSummary {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  const n = p.samples.length;
  const avg = n > 1 ? (p.timeDeltas.slice(1).reduce((a, b) => a + b, 0) / (n - 1)) : 0;
  for (let i = 0; i < n; i++) {
    // Sample i stands for the interval up to sample i+1 (as DevTools counts it).
    const us = i + 1 < n ? p.timeDeltas[i + 1]! : avg;
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + us);
  }
  let idle = 0;
  let program = 0;
  let gc = 0;
  let total = 0;
  const fn = new Map<string, FrameShare>();
  const mod = new Map<string, number>();
  for (const [id, us] of self) {
    total += us;
    const node = byId.get(id);
    const name = node?.callFrame.functionName ?? "";
    if (name === "(idle)") idle += us;
    else if (name === "(program)") program += us;
    else if (name === "(garbage collector)") gc += us;
    if (name === "(idle)" || name === "(root)") continue;
    const cf = node?.callFrame ?? { functionName: "", url: "", lineNumber: -1, columnNumber: -1 };
    const module = name.startsWith("(") ? name : urlModule(cf.url, cf.lineNumber, map);
    const key = `${name}|${module}|${cf.lineNumber}`;
    const f = fn.get(key) ?? { name: name || "(anonymous)", module, selfMs: 0, pct: 0 };
    f.selfMs += us / 1000;
    fn.set(key, f);
    mod.set(module, (mod.get(module) ?? 0) + us / 1000);
  }
  const busyMs = (total - idle) / 1000;
  const pct = (ms: number) => (busyMs > 0 ? (100 * ms) / busyMs : 0);
  const topFunctions = [...fn.values()].sort((a, b) => b.selfMs - a.selfMs).slice(0, top).map((f) => ({ ...f, pct: pct(f.selfMs) }));
  const byModule = [...mod].sort((a, b) => b[1] - a[1]).slice(0, top).map(([module, selfMs]) => ({ module, selfMs, pct: pct(selfMs) }));
  return {
    sampledMs: total / 1000,
    idleMs: idle / 1000,
    busyMs,
    programMs: program / 1000,
    gcMs: gc / 1000,
    jsMs: busyMs - program / 1000 - gc / 1000,
    topFunctions,
    byModule,
  };
}
