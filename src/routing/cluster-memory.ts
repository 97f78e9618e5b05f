// What one isolate remembers for cluster choice between requests: which cluster a routing key
// was last served by (stickiness) and which engines recently pushed back with a capacity
// status (a 429 makes its cluster count as saturated for `geo.pushback_ms`). Bounded, so a
// client sending endless routing keys costs a fixed amount of memory.
const MAX_STICKY_KEYS = 10_000;
const MAX_PUSHBACKS = 1_000;

export class ClusterMemory {
  private readonly sticky = new Map<string, string>();
  private readonly pushbacks = new Map<string, number>();

  stickyCluster(routingKey: string): string | undefined {
    return this.sticky.get(routingKey);
  }

  /** Records where a routing key was served; the oldest key goes first beyond the bound. */
  remember(routingKey: string, cluster: string): void {
    if (this.sticky.get(routingKey) === cluster) return;
    this.sticky.delete(routingKey);
    this.sticky.set(routingKey, cluster);
    if (this.sticky.size > MAX_STICKY_KEYS) this.sticky.delete(this.sticky.keys().next().value!);
  }

  notePushback(engine: string, now: number): void {
    this.pushbacks.delete(engine);
    this.pushbacks.set(engine, now);
    if (this.pushbacks.size > MAX_PUSHBACKS) this.pushbacks.delete(this.pushbacks.keys().next().value!);
  }

  /** Whether the engine pushed back within the last `windowMs`. */
  pushedBack(engine: string, now: number, windowMs: number): boolean {
    const at = this.pushbacks.get(engine);
    return at !== undefined && now - at < windowMs;
  }
}
