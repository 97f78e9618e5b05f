// Prints a SQL API result as a plain-text table for the terminal. The API quotes 64-bit
// integers (ClickHouse's JSON default), so numeric strings are formatted like numbers.
import type { SqlResult } from "./sql-api.js";

function cell(v: unknown): { text: string; numeric: boolean } {
  if (v === null || v === undefined) return { text: "-", numeric: false };
  const n = typeof v === "number" ? v : typeof v === "string" && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v) ? Number(v) : undefined;
  if (n === undefined) return { text: String(v), numeric: false };
  if (!Number.isFinite(n)) return { text: String(n), numeric: true };
  if (Number.isInteger(n)) return { text: String(n), numeric: true };
  // Rates are < 1 and want more places than milliseconds do.
  return { text: Math.abs(n) < 1 ? n.toFixed(4) : n.toFixed(2), numeric: true };
}

export function formatTable(result: SqlResult): string {
  const columns = result.meta.map((c) => c.name);
  if (result.data.length === 0) return `(no rows)  columns: ${columns.join(", ")}`;
  const rows = result.data.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i]!.text.length)));
  const line = (cells: { text: string; numeric: boolean }[]) =>
    cells.map((c, i) => (c.numeric ? c.text.padStart(widths[i]!) : c.text.padEnd(widths[i]!))).join("  ").trimEnd();
  const header = line(columns.map((c) => ({ text: c, numeric: false })));
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [header, rule, ...rows.map(line), `(${result.rows} row${result.rows === 1 ? "" : "s"})`].join("\n");
}
