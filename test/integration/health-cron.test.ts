// The Worker's scheduled handler (the every-minute cron trigger) runs the registry's health
// checks when they are due and leaves them alone when the alarm ran recently. Its own file:
// "due" depends on when the object last probed, which other tests would move.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { alarmAt, deleteAlarm, loaded, registry, runCron } from "../support/admin.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({ engines: [{ name: "e", role: "decode", kvConnector: "NixlConnector", model: "m" }] });
});
afterAll(async () => {
  await cluster.close();
});
afterEach(async () => {
  await deleteAlarm();
});

const raw = () => ({
  models: { m: { regular: [{ name: "cron-e", url: cluster.url("e") }] } },
  health: { interval_secs: 60, timeout_secs: 2, failure_threshold: 1, success_threshold: 1 },
});

async function healthOf(name: string) {
  const snap = await registry().snapshot(loaded(raw()));
  return snap.unchanged ? undefined : snap.health[name];
}

it("runs the checks from the scheduled handler and arms the alarm; a second cron right after is not due", async () => {
  await deleteAlarm();
  expect(await alarmAt()).toBeNull();
  await runCron(raw());
  const first = await healthOf("cron-e");
  expect(first?.status).toBe("ready");
  expect(await alarmAt()).not.toBeNull();

  await runCron(raw());
  expect((await healthOf("cron-e"))?.lastProbeAt).toBe(first?.lastProbeAt);
});

it("does nothing with health checks disabled, or with an invalid config", async () => {
  const before = (await healthOf("cron-e"))?.lastProbeAt;
  await deleteAlarm();
  await runCron({ ...raw(), health: { ...raw().health, disabled: true } });
  await runCron({ models: "nope" });
  expect((await healthOf("cron-e"))?.lastProbeAt).toBe(before);
});
