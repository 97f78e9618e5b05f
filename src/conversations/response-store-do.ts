// The Responses API's stored responses (issue 29): a SQLite-backed Durable Object per response
// id (the surface addresses it with idFromName(id)), so a response can be read, continued or
// deleted from any isolate in any location, and engines stay stateless. Expired responses go on
// the object's alarm, set to the earliest expiry it holds.
import { DurableObject } from "cloudflare:workers";
import { inputItemsPage, listedItems, type InputItemsPage, type InputItemsQuery, type UnknownCursor } from "./input-items.js";
import { ResponseSql } from "./response-sql.js";
import type { StoredResponse, StoredResponseInput } from "./stored-response.js";

export class ResponseStore extends DurableObject<Record<string, never>> {
  private readonly rows: ResponseSql;

  constructor(ctx: DurableObjectState, env: Record<string, never>) {
    super(ctx, env);
    this.rows = new ResponseSql(ctx.storage.sql);
  }

  async put(record: StoredResponseInput): Promise<StoredResponse> {
    const stored = this.rows.put(record, Date.now());
    await this.armAlarm(stored.expiresAt);
    return stored;
  }

  get(id: string, owner: string): StoredResponse | undefined {
    return this.rows.get(id, owner, Date.now());
  }

  /** A page of the response's input items, paged here so only the page leaves the object. */
  inputItems(id: string, owner: string, query: InputItemsQuery): InputItemsPage | UnknownCursor | undefined {
    const stored = this.rows.get(id, owner, Date.now());
    if (!stored) return undefined;
    return inputItemsPage(listedItems(JSON.parse(stored.conversation) as Record<string, unknown>[], id), query);
  }

  delete(id: string, owner: string): boolean {
    return this.rows.delete(id, owner, Date.now());
  }

  override async alarm(): Promise<void> {
    const next = this.rows.sweep(Date.now());
    if (next !== undefined) await this.ctx.storage.setAlarm(next);
  }

  private async armAlarm(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || at < current) await this.ctx.storage.setAlarm(at);
  }
}
