// Process bookkeeping for the local scripts (`npm start`, `npm run sim`, `npm run smoke`), read
// from /proc (Linux): what runs in a process group, a group's shutdown (SIGTERM, then SIGKILL),
// and a watch on the commands that launched this script (npm, sh -c, tsx), so that a script
// whose launcher died (npm killed without forwarding the signal) stops what it started
// instead of leaving it serving.
import { readFileSync, readdirSync } from "node:fs";

export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  /** Process state letter from /proc/<pid>/stat ("Z" = zombie, already exited). */
  state: string;
  cmdline: string;
}

export function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may contain spaces: the fields follow the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
    return { pid, state: fields[0]!, ppid: Number(fields[1]), pgid: Number(fields[2]), cmdline };
  } catch {
    return undefined; // gone
  }
}

export function listProcesses(): ProcessInfo[] {
  const out: ProcessInfo[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const info = processInfo(Number(name));
    if (info) out.push(info);
  }
  return out;
}

/** Running (not zombie) processes of a process group. */
export function groupMembers(pgid: number): ProcessInfo[] {
  return listProcesses().filter((p) => p.pgid === pgid && p.state !== "Z");
}

/** Every running descendant of `root`. */
export function descendantsOf(root: number): ProcessInfo[] {
  const all = listProcesses();
  const out: ProcessInfo[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const p of all) {
      if (p.ppid !== parent) continue;
      queue.push(p.pid);
      if (p.state !== "Z") out.push(p);
    }
  }
  return out;
}

export function isRunning(pid: number): boolean {
  const info = processInfo(pid);
  return info !== undefined && info.state !== "Z";
}

/** A short, recognisable name for a process: wrangler, workerd, esbuild, tsx, npm, node <script>. */
export function processName(p: ProcessInfo): string {
  const c = p.cmdline;
  if (/^(\/usr)?(\/bin\/)?sh -c /.test(c)) return "sh -c";
  if (/\/workerd\s+serve\b/.test(c)) return "workerd";
  if (/\/esbuild\b/.test(c)) return "esbuild";
  if (/wrangler(\/bin\/wrangler\.js|-dist\/cli\.js)/.test(c)) return "wrangler";
  if (/\bnpm(-cli\.js)?\b/.test(c)) return "npm";
  if (/\.bin\/tsx\b|tsx\/dist\/cli/.test(c)) return "tsx";
  if (/^\S*node\s.*\s-e\s/.test(c)) return "node -e";
  const script = /\s(\S+\.[cm]?[tj]s)\b/.exec(c);
  if (script) return `node ${script[1]}`;
  return c.split(" ")[0]!.split("/").pop() ?? c;
}

export function describeProcesses(list: ProcessInfo[]): string {
  return list.map((p) => `${processName(p)} (pid ${p.pid})`).join(", ");
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Stops a process group: SIGTERM to the whole group, and SIGKILL to what is left after
 *  `graceMs`. Resolves with the processes that were in the group, once none is running. */
export async function stopProcessGroup(pgid: number, graceMs = 3_000): Promise<ProcessInfo[]> {
  const members = groupMembers(pgid);
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pgid, signal);
    } catch {
      // the group is empty
    }
  };
  signalGroup("SIGTERM");
  const deadline = Date.now() + graceMs;
  while (groupMembers(pgid).length > 0 && Date.now() < deadline) await sleep(100);
  if (groupMembers(pgid).length > 0) {
    signalGroup("SIGKILL");
    const killDeadline = Date.now() + 1_000;
    while (groupMembers(pgid).length > 0 && Date.now() < killDeadline) await sleep(50);
  }
  return members;
}

// The commands that stand between a user's shell and this script: npm / npx (and the `sh -c`
// npm runs scripts with), the tsx CLI, and node running through tsx.
const LAUNCHER = /\bnpm\b|npm-cli\.js|\bnpx\b|\btsx\b|^(\/usr)?(\/bin\/)?sh -c /;

/** This process's launchers: its ancestors, nearest first, as long as they are npm, npx,
 *  `sh -c` or tsx. Empty when started straight from a shell. */
export function launchers(): ProcessInfo[] {
  const out: ProcessInfo[] = [];
  let pid = process.ppid;
  while (pid > 1) {
    const info = processInfo(pid);
    if (!info || !LAUNCHER.test(info.cmdline)) break;
    out.push(info);
    pid = info.ppid;
  }
  return out;
}

/** Calls `onGone` once if any launcher exits (e.g. npm got SIGTERM and did not forward it):
 *  without this, what the script started would keep serving as an orphan. Returns a stop function. */
export function watchLaunchers(onGone: (launcher: ProcessInfo) => void, intervalMs = 250): () => void {
  const watched = launchers();
  if (watched.length === 0) return () => {};
  const timer = setInterval(() => {
    const gone = watched.find((p) => !isRunning(p.pid));
    if (gone) {
      clearInterval(timer);
      onGone(gone);
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
