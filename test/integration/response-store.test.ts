// The Responses API's store, in workerd: the SQLite-backed Durable Object per response id.
// Scoped to the owner that stored it, gone after its TTL (on read and on the object's alarm),
// and a conversation far past SQLite's 2 MB value limit comes back whole.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ResponseStoreClient } from "../../src/conversations/response-store-client.js";
import type { ResponseStore } from "../../src/conversations/response-store-do.js";

const store = () => new ResponseStoreClient(env.RESPONSES);
let n = 0;
const freshId = () => `resp_test_${Date.now()}_${n++}`;

describe("response store", () => {
  it("returns a stored response to its owner only, and deletes it for its owner only", async () => {
    const id = freshId();
    await store().put({ id, owner: "alice", response: `{"id":"${id}"}`, conversation: "[]", ttlSecs: 60 });
    const got = await store().get(id, "alice");
    expect(got?.response).toBe(`{"id":"${id}"}`);
    expect(got!.expiresAt - got!.createdAt).toBe(60_000);
    expect(await store().get(id, "mallory")).toBeUndefined();
    expect(await store().delete(id, "mallory")).toBe(false);
    expect(await store().get(id, "alice")).toBeDefined();
    expect(await store().delete(id, "alice")).toBe(true);
    expect(await store().get(id, "alice")).toBeUndefined();
    expect(await store().delete(id, "alice")).toBe(false);
  });

  it("keeps a conversation larger than one SQLite value, character for character", async () => {
    const id = freshId();
    // 5 MB of 3-byte characters mixed with ASCII: more than two pieces, each under 2 MB.
    const conversation = JSON.stringify(["€".repeat(1_200_000), "x".repeat(1_500_000), "end"]);
    await store().put({ id, owner: "o", response: "{}", conversation, ttlSecs: 60 });
    expect((await store().get(id, "o"))?.conversation).toBe(conversation);
  });

  it("forgets a response once its TTL has passed, and the alarm sweeps it from storage", async () => {
    const id = freshId();
    await store().put({ id, owner: "o", response: "{}", conversation: "[1]", ttlSecs: 1 });
    const stub = env.RESPONSES.get(env.RESPONSES.idFromName(id));
    expect(await runInDurableObject(stub, (_o: ResponseStore, state) => state.storage.getAlarm())).not.toBeNull();
    await new Promise((r) => setTimeout(r, 1_100));
    // workerd may already have run the alarm on its own; run it now if it has not.
    await runDurableObjectAlarm(stub);
    const rows = await runInDurableObject(stub, (_o: ResponseStore, state) => ({
      responses: state.storage.sql.exec("SELECT COUNT(*) AS c FROM responses").one().c,
      parts: state.storage.sql.exec("SELECT COUNT(*) AS c FROM conversation_parts").one().c,
    }));
    expect(rows).toEqual({ responses: 0, parts: 0 });
    expect(await store().get(id, "o")).toBeUndefined();
  });

  it("a second put of the same id replaces the first, pieces included", async () => {
    const id = freshId();
    await store().put({ id, owner: "o", response: "{\"v\":1}", conversation: "a".repeat(1_100_000), ttlSecs: 60 });
    await store().put({ id, owner: "o", response: "{\"v\":2}", conversation: "b", ttlSecs: 60 });
    const got = await store().get(id, "o");
    expect(got).toMatchObject({ response: "{\"v\":2}", conversation: "b" });
  });
});
