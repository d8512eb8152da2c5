/** Time is injected so expiry, retries and schedules are testable without sleeping. */
export interface Clock {
  /** Epoch seconds, the interface's timestamp unit. */
  now(): number;
  /** Epoch milliseconds. */
  nowMs(): number;
}

export const systemClock: Clock = {
  now: () => Math.floor(Date.now() / 1000),
  nowMs: () => Date.now(),
};
