// Runs `wrangler dev` on a free loopback port with a given gateway config, for end-to-end
// tests with independent clients (buf curl) against the Worker as `npm start` serves it.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export interface WranglerDev {
  url: string;
  stop(): Promise<void>;
}

export async function startWranglerDev(config: unknown, timeoutMs = 90_000): Promise<WranglerDev> {
  const port = await freePort();
  const inspector = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    [
      "node_modules/wrangler/bin/wrangler.js", "dev",
      "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector),
      "--show-interactive-dev-session=false",
      "--var", `GATEWAY_CONFIG:${JSON.stringify(config)}`,
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" } },
  );
  let log = "";
  child.stdout?.on("data", (d) => (log += String(d)));
  child.stderr?.on("data", (d) => (log += String(d)));
  const url = `http://127.0.0.1:${port}`;
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
    });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}):\n${log}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) return { url, stop };
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  await stop();
  throw new Error(`wrangler dev did not answer within ${timeoutMs} ms:\n${log}`);
}
