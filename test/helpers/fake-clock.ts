// A fake clock for the time a test measures, moved 1 ms a turn of the event loop: timers
// (setTimeout) fire at their own time on it and Date reads it, while what needs no timer (I/O
// over loopback, an answer given at once) takes a few turns, however loaded the machine. Node's
// internal timers (HTTP/2's, sockets') stay real.
import FakeTimers from '@sinonjs/fake-timers';

/** Runs `work` on the fake clock, moved until it settles or `limitMs` have passed on it (then it fails). */
export async function onTheClock<T>(work: () => Promise<T>, limitMs: number): Promise<T> {
  // A timer set before the clock is cleared by the real clearTimeout.
  const clock = FakeTimers.install({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: Date.now(), shouldClearNativeTimers: true });
  try {
    const started = clock.now;
    const { done, settled } = watched(work());
    while (!settled() && clock.now - started < limitMs) await clock.tickAsync(1);
    if (!settled()) throw new Error(`not settled within ${limitMs} ms on the fake clock`);
    return await done;
  } finally {
    clock.uninstall();
  }
}

/** Whether `p` has settled, either way: a promise that settles with it, and a flag set once it has. */
export function watched<T>(p: Promise<T>): { done: Promise<T>; settled: () => boolean } {
  let settled = false;
  const done = p.finally(() => {
    settled = true;
  });
  done.catch(() => undefined);
  return { done, settled: () => settled };
}
