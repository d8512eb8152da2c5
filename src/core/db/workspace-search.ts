import type { Expression, SqlBool } from 'kysely';

/** A workspace page's search as a store runs it (models, prompts): the query's fields and the caller's read condition. */
export interface WorkspaceSearch {
  query?: string;
  viewOption?: string;
  tag?: string;
  orderBy?: string;
  direction?: string;
  /** The caller's read condition (owner or grant), from AccessService.accessFilter. */
  access: Expression<SqlBool>;
  userId: string;
  offset: number;
  limit: number;
}
