import type { Core } from '../../core/context.js';
import type { UsersService } from '../users/service.js';

/** TO BE COMPLETED by the groups work. */
export class GroupsService {
  constructor(
    readonly core: Core,
    readonly users: UsersService,
  ) {}

  /** Ids of the groups the user belongs to. */
  async groupIdsOf(_userId: string): Promise<string[]> {
    throw new Error('not implemented');
  }
}
