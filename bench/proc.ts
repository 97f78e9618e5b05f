// /proc readings: CPU time (utime+stime, in clock ticks) and resident memory of a process,
// and the facts about the machine that go at the top of every result.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { availableParallelism } from "node:os";

let clkTck: number | undefined;

/** Clock ticks per second (`getconf CLK_TCK`), the unit of utime/stime in /proc/<pid>/stat. */
export function clockTicks(): number {
  if (clkTck === undefined) {
    const out = execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim();
    const n = Number(out);
    clkTck = Number.isFinite(n) && n > 0 ? n : 100;
  }
  return clkTck;
}

/** utime + stime of the process (all its threads, live and exited), in clock ticks. */
export function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name: state(3) ppid(4) ... utime(14) stime(15).
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/** CPU milliseconds used by the process so far. */
export function cpuMs(pid: number): number {
  return (cpuTicks(pid) * 1000) / clockTicks();
}

/** VmRSS of the process in MB (MiB, 1024*1024 bytes). */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
}

/** A CPU counter over several processes, read before and after a piece of work. */
export class CpuMeter {
  private readonly start: Map<string, number>;
  private readonly t0 = performance.now();
  constructor(private readonly pids: Record<string, number | undefined>) {
    this.start = this.read();
  }
  private read(): Map<string, number> {
    const m = new Map<string, number>();
    for (const [name, pid] of Object.entries(this.pids)) if (pid !== undefined) m.set(name, cpuTicks(pid));
    return m;
  }
  /** CPU ms used by each process since the meter was made, and the wall time. */
  stop(): { wallMs: number; cpuMs: Record<string, number>; ticks: Record<string, number> } {
    const end = this.read();
    const wallMs = performance.now() - this.t0;
    const cpu: Record<string, number> = {};
    const ticks: Record<string, number> = {};
    for (const [name, t] of end) {
      const d = t - (this.start.get(name) ?? t);
      ticks[name] = d;
      cpu[name] = (d * 1000) / clockTicks();
    }
    return { wallMs, cpuMs: cpu, ticks };
  }
}

export interface MachineInfo {
  nproc: number;
  cpuModel: string;
  memTotalMb: number;
  kernel: string;
}

export function machineInfo(): MachineInfo {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? "unknown";
  const meminfo = readFileSync("/proc/meminfo", "utf8");
  const memKb = Number(/^MemTotal:\s+(\d+)\s+kB/m.exec(meminfo)?.[1] ?? 0);
  let nproc = availableParallelism();
  try {
    nproc = Number(execFileSync("nproc", { encoding: "utf8" }).trim()) || nproc;
  } catch {
    // keep availableParallelism()
  }
  let kernel = "unknown";
  try {
    kernel = readFileSync("/proc/sys/kernel/osrelease", "utf8").trim();
  } catch {
    // not Linux?
  }
  return { nproc, cpuModel: model, memTotalMb: Math.round(memKb / 1024), kernel };
}

/** TCP ports the process listens on (IPv4), from its socket fds and /proc/net/tcp. */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const c = line.trim().split(/\s+/);
    // st 0A = LISTEN; c[9] is the inode.
    if (c.length > 9 && c[3] === "0A" && inodes.has(c[9]!)) ports.push(parseInt(c[1]!.split(":")[1]!, 16));
  }
  return ports;
}

function cpuTotals(): { busy: number; total: number } {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  const total = v.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/** How many cores the whole machine kept busy over `ms` (everything, not just our processes). */
export async function machineBusyCores(ms = 1_000): Promise<number> {
  const a = cpuTotals();
  await new Promise((r) => setTimeout(r, ms));
  const b = cpuTotals();
  const total = b.total - a.total;
  return total > 0 ? ((b.busy - a.busy) / total) * availableParallelism() : 0;
}
