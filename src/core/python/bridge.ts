import { randomUUID } from 'node:crypto';
import type { UserRecord } from '../auth/user.js';
import { HttpError } from '../http/errors.js';

type Json = Record<string, unknown>;

/** What a bridge call runs as: the user a plugin request is made for, for as long as the request runs. */
export interface BridgeCaller {
  user: UserRecord;
  /** Paths of bytes this request stored without a file record yet (Storage.upload_file): readable by it. */
  uploads: Set<string>;
  /** Where the plugin can open stored bytes: a copy in its worker's private folder (it cannot see DATA_DIR). */
  exportFile(file: string): Promise<string>;
}

/** One operation plugins may ask of Parley (`open_webui` compatibility package → parley_host/bridge.py). */
export type BridgeOperation = (caller: BridgeCaller, args: Json) => Promise<unknown>;

/**
 * The capability one host request holds: Parley answers its plugin's calls as
 * `user` until the request ends, then refuses them (`revoke`). The worker routes
 * a plugin's call to the session of the request it belongs to, so a session
 * never serves another request; the token names it in logs.
 */
export class BridgeSession {
  readonly token = randomUUID();
  private active = true;
  private readonly uploads = new Set<string>();

  constructor(
    private readonly bridge: PluginBridge,
    readonly user: UserRecord,
  ) {}

  async call(op: string, args: unknown, exportFile: (file: string) => Promise<string> = async (file) => file): Promise<unknown> {
    if (!this.active) throw new HttpError(403, 'This plugin call has ended; Parley no longer answers for it');
    const caller: BridgeCaller = { user: this.user, uploads: this.uploads, exportFile };
    return this.bridge.run(caller, op, args !== null && typeof args === 'object' && !Array.isArray(args) ? (args as Json) : {});
  }

  revoke(): void {
    this.active = false;
  }
}

/**
 * The operations plugins may call, registered by the areas that answer them
 * (src/core/python/compat-api.ts). Each one checks access as the caller, through
 * the areas' services; failures are HttpErrors whose status reaches the plugin.
 */
export class PluginBridge {
  private readonly operations = new Map<string, BridgeOperation>();

  define(op: string, operation: BridgeOperation): void {
    this.operations.set(op, operation);
  }

  open(user: UserRecord): BridgeSession {
    return new BridgeSession(this, user);
  }

  async run(caller: BridgeCaller, op: string, args: Json): Promise<unknown> {
    const operation = this.operations.get(op);
    if (!operation) throw new HttpError(501, `Parley does not offer ${op} to plugins`);
    return operation(caller, args);
  }
}
