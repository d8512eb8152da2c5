import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import type { AccessService } from '../../core/access/service.js';
import type { UsersService } from '../users/service.js';

/** TO BE COMPLETED by the auths work. */
export class AuthsService {
  constructor(
    readonly core: Core,
    readonly users: UsersService,
    readonly access: AccessService,
  ) {}

  /** Refuses an `sk-` key where API keys are off, not permitted, or restricted to other paths (403). */
  async checkApiKeyUse(_user: UserRecord, _path: string): Promise<void> {
    throw new Error('not implemented');
  }
}
