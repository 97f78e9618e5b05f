// In-flight requests per engine in this isolate, for load-aware policies. A guard is taken
// when a leg is dispatched and released when it ends; a skipped prefill leg takes none.

const inFlight = new Map<string, number>();

export function engineLoad(engine: string): number {
  return inFlight.get(engine) ?? 0;
}

/** Charges one in-flight request to the engine; the returned function releases it (once). */
export function chargeLoad(engine: string): () => void {
  inFlight.set(engine, engineLoad(engine) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = engineLoad(engine) - 1;
    if (n <= 0) inFlight.delete(engine);
    else inFlight.set(engine, n);
  };
}

export function totalInFlight(): number {
  let n = 0;
  for (const v of inFlight.values()) n += v;
  return n;
}
