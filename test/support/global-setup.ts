import { createServer } from "node:http";
import type { TestProject } from "vitest/node";

export default async function setup(project: TestProject) {
  const server = createServer((req, res) => { res.end("hello from node " + req.url); });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  if (typeof addr !== "object" || !addr) throw new Error("no address");
  project.provide("simControlUrl", `http://127.0.0.1:${addr.port}`);
  return async () => { await new Promise((r) => server.close(r)); };
}
