import type { Expression, SqlBool } from 'kysely';
import type { WorkspaceListQuery } from '../http/schema.js';

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

/** Rows per workspace page (the reference routers' PAGE_ITEM_COUNT). */
export const WORKSPACE_PAGE_SIZE = 30;

/** The store search of a workspace page's query, for a caller whose read condition is `access`. */
export function workspaceSearch(query: WorkspaceListQuery, access: Expression<SqlBool>, userId: string): WorkspaceSearch {
  const page = Math.max(1, query.page ?? 1);
  return {
    query: query.query,
    viewOption: query.view_option,
    tag: query.tag,
    orderBy: query.order_by,
    direction: query.direction,
    access,
    userId,
    offset: (page - 1) * WORKSPACE_PAGE_SIZE,
    limit: WORKSPACE_PAGE_SIZE,
  };
}
