// Values test/support/global-setup.ts provides to tests (vitest `inject`).
declare module "vitest" {
  export interface ProvidedContext {
    /** Base URL of the sim control server (sim/control.ts). */
    simControlUrl: string;
  }
}
export {};
