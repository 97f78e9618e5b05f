// Everything the benchmarks start registers how to stop it here; run.ts calls runCleanups()
// at the end, on an error, and on SIGINT/SIGTERM, so no process outlives the run.

const cleanups: { name: string; fn: () => Promise<void> }[] = [];
let running: Promise<void> | undefined;

export function onCleanup(name: string, fn: () => Promise<void>): void {
  cleanups.push({ name, fn });
}

/** Stops everything registered, newest first; each stop is bounded to 15 s. */
export function runCleanups(): Promise<void> {
  running ??= (async () => {
    while (cleanups.length > 0) {
      const c = cleanups.pop()!;
      try {
        await Promise.race([c.fn(), new Promise((r) => setTimeout(r, 15_000).unref())]);
      } catch (err) {
        console.error(`bench: stopping ${c.name}: ${String(err)}`);
      }
    }
  })();
  return running;
}

export function installSignalHandlers(): void {
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(sig, () => {
      console.error(`\nbench: ${sig}, stopping everything ...`);
      void runCleanups().then(() => process.exit(130));
    });
  }
}
