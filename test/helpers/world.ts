import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { Clock } from '../../src/core/clock.js';
import type { EventPayload } from '../../src/core/events/publish.js';
import { type ApiClient, destroyServer, recordEvents, startServer, type TestServer } from './server.js';
import { type Account, addUser, type Role, signup } from './users.js';

interface Closable {
  close(): Promise<void>;
}

export interface ServerSetup<F extends Record<string, Closable>, U extends string> {
  /** Fakes the server talks to (model providers...): started before it, closed after it. */
  fakes?: () => Promise<F>;
  /** The server's environment; as a function, it is given the started fakes (for their URLs). */
  env?: Record<string, string> | ((fakes: F) => Record<string, string>);
  clock?: Clock;
  /** Name of the first account, which becomes admin (a generated one by default); false: no account. */
  admin?: string | false;
  /** Accounts the admin adds, in this order, by the name tests use: role, or role and display name. */
  users?: { [K in U]: Role | readonly [Role, string] };
  /** Forget the recorded events before each test. */
  freshEvents?: boolean;
}

/** What a test file works with; filled in by beforeAll. */
export type ServerWorld<F = {}, U extends string = never> = {
  server: TestServer;
  api: ApiClient;
  admin: Account;
  /** Every event the server published, in order. */
  events: EventPayload[];
  /** The events recorded so far, leaving none. */
  takeEvents(): EventPayload[];
} & F & { [K in U]: Account };

/**
 * One server for the tests of the enclosing file or describe: started in
 * beforeAll with its fakes and accounts, destroyed (with the fakes) in afterAll.
 */
export function useServer<F extends Record<string, Closable> = {}, U extends string = never>(setup: ServerSetup<F, U> = {}): ServerWorld<F, U> {
  const world = { takeEvents: () => world.events.splice(0) } as ServerWorld<F, U>;
  const fields = world as Record<string, unknown>;
  let fakes: Closable[] = [];
  beforeAll(async () => {
    const started = (await setup.fakes?.()) ?? ({} as F);
    fakes = Object.values(started);
    Object.assign(world, started);
    const env = typeof setup.env === 'function' ? setup.env(started) : setup.env;
    const server = await startServer({ env, clock: setup.clock });
    Object.assign(world, { server, api: server.api, events: recordEvents(server) });
    if (setup.admin === false) return;
    world.admin = await signup(server.api, setup.admin);
    for (const [key, spec] of Object.entries<Role | readonly [Role, string]>(setup.users ?? ({} as Record<U, Role>))) {
      const [role, name] = typeof spec === 'string' ? [spec] : spec;
      fields[key] = await addUser(server.api, world.admin, role, name);
    }
  });
  if (setup.freshEvents) {
    beforeEach(() => {
      world.events.length = 0;
    });
  }
  afterAll(async () => {
    if (world.server) await destroyServer(world.server);
    for (const fake of fakes) await fake.close();
  });
  return world;
}
