// The response store's SQLite tables. A Durable Object's SQL values are at most 2 MB each, so
// the conversation text is kept in pieces (`conversation_parts`), reassembled on read.
// Synchronous, as ctx.storage.sql is.
import type { StoredResponse, StoredResponseInput } from "./stored-response.js";

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS responses (
     id TEXT PRIMARY KEY,
     owner TEXT NOT NULL,
     response TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     expires_at INTEGER NOT NULL
   )`,
  `CREATE TABLE IF NOT EXISTS conversation_parts (
     id TEXT NOT NULL,
     seq INTEGER NOT NULL,
     text TEXT NOT NULL,
     PRIMARY KEY (id, seq)
   )`,
];

/** Characters per stored piece: at most 3 UTF-8 bytes each, so a piece stays under 2 MB. */
export const PART_CHARS = 512 * 1024;

type Row = Record<string, SqlStorageValue>;

export class ResponseSql {
  constructor(private readonly sql: SqlStorage) {
    for (const statement of SCHEMA) sql.exec(statement);
  }

  put(r: StoredResponseInput, now: number): StoredResponse {
    this.remove(r.id);
    const expiresAt = now + r.ttlSecs * 1000;
    this.sql.exec("INSERT INTO responses (id, owner, response, created_at, expires_at) VALUES (?, ?, ?, ?, ?)", r.id, r.owner, r.response, now, expiresAt);
    for (let at = 0, seq = 0; at < r.conversation.length; at += PART_CHARS, seq++) {
      this.sql.exec("INSERT INTO conversation_parts (id, seq, text) VALUES (?, ?, ?)", r.id, seq, r.conversation.slice(at, at + PART_CHARS));
    }
    return { id: r.id, response: r.response, conversation: r.conversation, createdAt: now, expiresAt };
  }

  /** The response when `owner` stored it and it has not expired; an expired one is removed. */
  get(id: string, owner: string, now: number): StoredResponse | undefined {
    const [row] = this.sql.exec<Row>("SELECT owner, response, created_at, expires_at FROM responses WHERE id = ?", id).toArray();
    if (!row || row.owner !== owner) return undefined;
    if (Number(row.expires_at) <= now) {
      this.remove(id);
      return undefined;
    }
    const parts = this.sql.exec<Row>("SELECT text FROM conversation_parts WHERE id = ? ORDER BY seq", id).toArray();
    return { id, response: String(row.response), conversation: parts.map((p) => String(p.text)).join(""), createdAt: Number(row.created_at), expiresAt: Number(row.expires_at) };
  }

  /** Removes the response when `owner` stored it; true when there was one to remove. */
  delete(id: string, owner: string, now: number): boolean {
    if (!this.get(id, owner, now)) return false;
    this.remove(id);
    return true;
  }

  /** Removes every expired response; returns the earliest expiry left, if any. */
  sweep(now: number): number | undefined {
    for (const row of this.sql.exec<Row>("SELECT id FROM responses WHERE expires_at <= ?", now).toArray()) this.remove(String(row.id));
    const [next] = this.sql.exec<Row>("SELECT MIN(expires_at) AS at FROM responses").toArray();
    return next?.at === null || next?.at === undefined ? undefined : Number(next.at);
  }

  private remove(id: string): void {
    this.sql.exec("DELETE FROM responses WHERE id = ?", id);
    this.sql.exec("DELETE FROM conversation_parts WHERE id = ?", id);
  }
}
