// In-flight requests per engine in this isolate, for load-aware policies. A charge is taken
// when a leg is dispatched and released when it ends; a skipped prefill leg takes none.
export class EngineLoads {
  private readonly inFlight = new Map<string, number>();

  load(engine: string): number {
    return this.inFlight.get(engine) ?? 0;
  }

  /** Charges one in-flight request to the engine; the returned function releases it (once). */
  charge(engine: string): () => void {
    this.inFlight.set(engine, this.load(engine) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = this.load(engine) - 1;
      if (n <= 0) this.inFlight.delete(engine);
      else this.inFlight.set(engine, n);
    };
  }

  total(): number {
    let n = 0;
    for (const v of this.inFlight.values()) n += v;
    return n;
  }
}
