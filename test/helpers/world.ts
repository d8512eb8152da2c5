import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { UserRecord } from '../../src/core/auth/user.js';
import type { Clock } from '../../src/core/clock.js';
import type { EventPayload } from '../../src/core/events/publish.js';
import { type ApiClient, destroyServer, recordEvents, startServer, type TestServer } from './server.js';
import { type Account, addUser, type Role, signup } from './users.js';

interface Closable {
  close(): Promise<void>;
}

/** Fake services a server talks to (model providers...), and the environment that points it at them. */
export interface Fakes<F extends Record<string, Closable>> {
  start(): Promise<F>;
  env?(fakes: NoInfer<F>): Record<string, string>;
}

export interface ServerSetup<F extends Record<string, Closable>, U extends string> {
  /** Started before the server, closed after it. */
  fakes?: Fakes<F>;
  /** The server's environment (over the fakes'). */
  env?: Record<string, string>;
  clock?: Clock;
  /** Name of the first account, which becomes admin (a generated one by default); false: no account. */
  admin?: string | false;
  /** Accounts the admin adds, in this order, by the name tests use: role, or role and display name. */
  users?: { [K in U]: Role | readonly [Role, string] };
}

/** A started server with its fakes and accounts. */
export type ServerWorld<F = {}, U extends string = never> = {
  server: TestServer;
  api: ApiClient;
  admin: Account;
  /** An account's stored user record, for calls straight to the services. */
  record(account: Account): Promise<UserRecord>;
  /** Every event the server published, in order. */
  events: EventPayload[];
  /** The events recorded so far, leaving none. */
  takeEvents(): EventPayload[];
  /** Stops the server and starts another on the same data folder and database (with `env` over the first's). */
  restart(env?: Record<string, string>): Promise<void>;
  /** Starts one more instance on the same data folder and database; it is stopped with the world. */
  addInstance(): Promise<TestServer>;
  /** Destroys the server, then closes the fakes. */
  close(): Promise<void>;
} & F & { [K in U]: Account };

/** Starts a server as `setup` says; for a test of its own (`close()` it), or through useServer. */
export async function startWorld<F extends Record<string, Closable> = {}, U extends string = never>(setup: ServerSetup<F, U> = {}): Promise<ServerWorld<F, U>> {
  const world = {} as ServerWorld<F, U>;
  await fill(world, setup);
  return world;
}

/** Starts the fakes, the server and the accounts into `world`. */
async function fill<F extends Record<string, Closable>, U extends string>(world: ServerWorld<F, U>, setup: ServerSetup<F, U>): Promise<void> {
  const fakes = (await setup.fakes?.start()) ?? ({} as F);
  const options = { env: { ...setup.fakes?.env?.(fakes), ...setup.env }, clock: setup.clock };
  const events: EventPayload[] = [];
  let server: TestServer | undefined;
  const instances: TestServer[] = [];
  const close = async () => {
    for (const instance of instances) await instance.close();
    if (server) await destroyServer(server);
    for (const fake of Object.values(fakes)) await fake.close();
  };
  const onSameData = (env: Record<string, string> = {}) =>
    startServer({ ...options, env: { ...options.env, ...env }, reuse: { dataDir: server!.dataDir, databaseUrl: server!.databaseUrl } });
  const restart = async (env?: Record<string, string>) => {
    await server!.close();
    server = await onSameData(env);
    recordEvents(server, events);
    Object.assign(world, { server, api: server.api });
  };
  const addInstance = async () => {
    const instance = await onSameData();
    instances.push(instance);
    return instance;
  };
  try {
    server = await startServer(options);
    recordEvents(server, events);
    const record = async (account: Account) => (await server!.parley.services.users.byId(account.id))!;
    Object.assign(world, fakes, { server, api: server.api, record, events, takeEvents: () => events.splice(0), restart, addInstance, close });
    if (setup.admin === false) return;
    const admin = await signup(server.api, setup.admin);
    const accounts: Record<string, Account> = { admin };
    for (const [key, spec] of Object.entries<Role | readonly [Role, string]>(setup.users ?? ({} as Record<U, Role>))) {
      const [role, name] = typeof spec === 'string' ? [spec] : spec;
      accounts[key] = await addUser(server.api, admin, role, name);
    }
    Object.assign(world, accounts);
  } catch (error) {
    await close();
    throw error;
  }
}

/** Runs `use` against a world of its own, closed afterwards whatever happens. */
export async function withWorld<F extends Record<string, Closable> = {}, U extends string = never, T = void>(
  setup: ServerSetup<F, U>,
  use: (world: ServerWorld<F, U>) => Promise<T>,
): Promise<T> {
  const world = await startWorld(setup);
  try {
    return await use(world);
  } finally {
    await world.close();
  }
}

/**
 * One server for the tests of the enclosing file or describe: started in
 * beforeAll, destroyed in afterAll. The world it returns is filled in by beforeAll.
 */
export function useServer<F extends Record<string, Closable> = {}, U extends string = never>(
  setup: ServerSetup<F, U> & {
    /** Forget the recorded events before each test. */
    freshEvents?: boolean;
  } = {},
): ServerWorld<F, U> {
  const world = {} as ServerWorld<F, U>;
  beforeAll(async () => {
    await fill(world, setup);
  });
  if (setup.freshEvents) {
    beforeEach(() => {
      world.events.length = 0;
    });
  }
  afterAll(async () => {
    await world.close?.();
  });
  return world;
}
