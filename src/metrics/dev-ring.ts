// The dev-only view of recent data points: a fixed-size ring per isolate, filled by the sink
// when DEV_METRICS is on and read by GET /admin/metrics/recent. Locally the Analytics Engine
// binding records nothing (miniflare's writeDataPoint is a no-op), so this is the only place
// `npm start` users can see what would have been written. Memory is bounded by the capacity.

export interface RecentPoint {
  /** Increases by one per point, across wrap-arounds: gaps show what was overwritten. */
  seq: number;
  at: string;
  point: AnalyticsEngineDataPoint;
}

export class PointRing {
  private readonly slots: (RecentPoint | undefined)[];
  private next = 0;
  private seq = 0;

  constructor(readonly capacity: number) {
    this.slots = new Array<RecentPoint | undefined>(capacity);
  }

  push(point: AnalyticsEngineDataPoint, now: number = Date.now()): void {
    this.slots[this.next] = { seq: ++this.seq, at: new Date(now).toISOString(), point };
    this.next = (this.next + 1) % this.capacity;
  }

  /** Oldest first. */
  entries(): RecentPoint[] {
    const out: RecentPoint[] = [];
    for (let i = 0; i < this.capacity; i++) {
      const p = this.slots[(this.next + i) % this.capacity];
      if (p) out.push(p);
    }
    return out;
  }

  clear(): void {
    this.slots.fill(undefined);
    this.next = 0;
  }
}

export const DEV_RING_CAPACITY = 200;
