// The registry object's SQLite storage: registry engines, the shared health and breaker state
// of every engine (config engines too, keyed by name), and a small meta table (epoch, version,
// the last config plan, the last health run). Synchronous, as ctx.storage.sql is; the object
// keeps everything in memory as well and writes through, so reads never touch SQL.
import type { Breaker } from "./breaker.js";
import type { EngineHealth } from "./health-state.js";
import { registryEngineProblem } from "./registry-names.js";
import type { RegistryEngine } from "./registry-types.js";

const SCHEMA_VERSION = "1";

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS engines (
     id TEXT PRIMARY KEY,
     model TEXT NOT NULL,
     role TEXT NOT NULL,
     url TEXT NOT NULL,
     transport TEXT NOT NULL,
     status TEXT NOT NULL,
     overrides TEXT NOT NULL,
     labels TEXT NOT NULL,
     discovered TEXT NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   )`,
  // One engine per URL per pool: a second registration of the same engine is a conflict.
  `CREATE UNIQUE INDEX IF NOT EXISTS engines_pool_url ON engines (model, role, url)`,
  `CREATE TABLE IF NOT EXISTS health (engine TEXT PRIMARY KEY, state TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS breakers (engine TEXT PRIMARY KEY, state TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
];

const OVERRIDE_KEYS = ["kv_connector", "kv_engine_id", "dp_rank", "dp_size", "bootstrap_port", "binding", "cluster"] as const;

type Row = Record<string, SqlStorageValue>;

export class RegistryStore {
  constructor(private readonly sql: SqlStorage) {
    for (const statement of SCHEMA) sql.exec(statement);
    if (this.getMeta("schema") === undefined) this.setMeta("schema", SCHEMA_VERSION);
  }

  getMeta(key: string): string | undefined {
    const rows = this.sql.exec<Row>("SELECT value FROM meta WHERE key = ?", key).toArray();
    return rows.length ? String(rows[0]!.value) : undefined;
  }

  setMeta(key: string, value: string): void {
    this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", key, value);
  }

  /** Every row that parses and passes the registry's rules; any other row is skipped with an
   *  error log (and left in storage, where DELETE can still remove it). */
  loadEngines(): RegistryEngine[] {
    const out: RegistryEngine[] = [];
    for (const row of this.sql.exec<Row>("SELECT * FROM engines ORDER BY created_at, id")) {
      let problem: string | undefined;
      try {
        const engine = engineFromRow(row);
        problem = registryEngineProblem(engine);
        if (!problem) out.push(engine);
      } catch (err) {
        problem = `does not parse: ${String(err)}`;
      }
      if (problem) console.error(JSON.stringify({ msg: "stored registry engine skipped", engine: String(row.id), problem }));
    }
    return out;
  }

  putEngine(e: RegistryEngine): void {
    const overrides: Record<string, unknown> = {};
    for (const k of OVERRIDE_KEYS) if (e[k] !== undefined) overrides[k] = e[k];
    this.sql.exec(
      `INSERT INTO engines (id, model, role, url, transport, status, overrides, labels, discovered, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET model = excluded.model, role = excluded.role, url = excluded.url,
         transport = excluded.transport, status = excluded.status, overrides = excluded.overrides,
         labels = excluded.labels, discovered = excluded.discovered, updated_at = excluded.updated_at`,
      e.id, e.model, e.role, e.url, e.transport, e.status,
      JSON.stringify(overrides), JSON.stringify(e.labels), JSON.stringify(e.discovered), e.created_at, e.updated_at,
    );
  }

  /** Whether a row was there to delete (a skipped, unparsable one counts). */
  deleteEngine(id: string): boolean {
    return this.sql.exec("DELETE FROM engines WHERE id = ?", id).rowsWritten > 0;
  }

  loadHealth(): Map<string, EngineHealth> {
    return loadStates<EngineHealth>(this.sql, "health");
  }

  putHealth(engine: string, h: EngineHealth): void {
    this.sql.exec("INSERT INTO health (engine, state) VALUES (?, ?) ON CONFLICT(engine) DO UPDATE SET state = excluded.state", engine, JSON.stringify(h));
  }

  deleteHealth(engine: string): void {
    this.sql.exec("DELETE FROM health WHERE engine = ?", engine);
  }

  loadBreakers(): Map<string, Breaker> {
    return loadStates<Breaker>(this.sql, "breakers");
  }

  putBreaker(engine: string, b: Breaker): void {
    this.sql.exec("INSERT INTO breakers (engine, state) VALUES (?, ?) ON CONFLICT(engine) DO UPDATE SET state = excluded.state", engine, JSON.stringify(b));
  }

  deleteBreaker(engine: string): void {
    this.sql.exec("DELETE FROM breakers WHERE engine = ?", engine);
  }
}

/** Shared state rows; one that does not parse is dropped (the next probe or outcome rebuilds it). */
function loadStates<T>(sql: SqlStorage, table: "health" | "breakers"): Map<string, T> {
  const out = new Map<string, T>();
  for (const row of sql.exec<Row>(`SELECT engine, state FROM ${table}`)) {
    try {
      const state: unknown = JSON.parse(String(row.state));
      if (typeof state !== "object" || state === null) throw new Error("not an object");
      out.set(String(row.engine), state as T);
    } catch (err) {
      console.error(JSON.stringify({ msg: `stored ${table} row dropped`, engine: String(row.engine), error: String(err) }));
      sql.exec(`DELETE FROM ${table} WHERE engine = ?`, row.engine);
    }
  }
  return out;
}

function engineFromRow(row: Row): RegistryEngine {
  return {
    id: String(row.id),
    model: String(row.model),
    role: String(row.role) as RegistryEngine["role"],
    url: String(row.url),
    transport: String(row.transport) as RegistryEngine["transport"],
    status: String(row.status) as RegistryEngine["status"],
    ...(JSON.parse(String(row.overrides)) as Partial<RegistryEngine>),
    labels: JSON.parse(String(row.labels)) as Record<string, string>,
    discovered: JSON.parse(String(row.discovered)) as RegistryEngine["discovered"],
    created_at: String(row.created_at),
    updated_at: String(row.updated_at),
  };
}
