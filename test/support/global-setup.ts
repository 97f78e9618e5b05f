// Starts the sim control server (sim/control.ts) on 127.0.0.1 before the integration tests;
// tests in workerd create the clusters they need through it and delete them afterwards.
import type { TestProject } from "vitest/node";
import { startControlServer } from "../../sim/control.js";

export default async function setup(project: TestProject) {
  const control = await startControlServer(0);
  project.provide("simControlUrl", control.url);
  return async () => {
    await control.close();
  };
}
