// workerd's own socket behind `wrangler dev`: where a test must see what a client sees without
// wrangler's proxy in between (the proxy hides a client's disconnect before the response head).
import { entryPort } from "../../bench/targets.js";
import type { WranglerDev } from "../../scripts/wrangler-dev.js";

export async function workerdPort(dev: WranglerDev): Promise<number> {
  const worker = dev.workerd().worker;
  if (worker === undefined) throw new Error("wrangler dev started no workerd process");
  return entryPort(worker, "/health");
}

export async function workerdUrl(dev: WranglerDev): Promise<string> {
  return `http://127.0.0.1:${await workerdPort(dev)}`;
}
