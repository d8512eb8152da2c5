import { type Static, Type } from '@sinclair/typebox';
import { Maybe } from '../../core/http/schema.js';

/** RFC 7643/7644 schema URIs. */
export const SCIM = {
  USER: 'urn:ietf:params:scim:schemas:core:2.0:User',
  GROUP: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  LIST: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  PATCH: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  ERROR: 'urn:ietf:params:scim:api:messages:2.0:Error',
  SERVICE_PROVIDER_CONFIG: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  RESOURCE_TYPE: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  SCHEMA: 'urn:ietf:params:scim:schemas:core:2.0:Schema',
} as const;

// Requests: what IdPs send. Unknown attributes (extension schemas, `schemas` itself) are allowed and ignored.

const Name = Type.Object({
  formatted: Maybe(Type.String()),
  familyName: Maybe(Type.String()),
  givenName: Maybe(Type.String()),
  middleName: Maybe(Type.String()),
  honorificPrefix: Maybe(Type.String()),
  honorificSuffix: Maybe(Type.String()),
});
const MultiValue = Type.Object({
  value: Type.String(),
  type: Maybe(Type.String()),
  primary: Maybe(Type.Boolean()),
  display: Maybe(Type.String()),
});
const Member = Type.Object({ value: Type.String(), $ref: Maybe(Type.String()), type: Maybe(Type.String()), display: Maybe(Type.String()) });

export const ScimUserCreate = Type.Object({
  externalId: Maybe(Type.String({ maxLength: 1024 })),
  userName: Type.String({ minLength: 1, maxLength: 320 }),
  name: Maybe(Name),
  displayName: Maybe(Type.String({ maxLength: 1024 })),
  emails: Maybe(Type.Array(MultiValue, { maxItems: 100 })),
  active: Maybe(Type.Boolean()),
  password: Maybe(Type.String()),
  photos: Maybe(Type.Array(MultiValue, { maxItems: 100 })),
});
export type ScimUserCreate = Static<typeof ScimUserCreate>;

/** PUT replaces: the same attributes, `userName` required as in a create (RFC 7644 §3.5.1). */
export const ScimUserReplace = ScimUserCreate;

export const ScimGroupCreate = Type.Object({
  externalId: Maybe(Type.String({ maxLength: 1024 })),
  displayName: Type.String({ minLength: 1, maxLength: 1024 }),
  members: Maybe(Type.Array(Member, { maxItems: 10_000 })),
});
export type ScimGroupCreate = Static<typeof ScimGroupCreate>;
export const ScimGroupReplace = ScimGroupCreate;

export const ScimPatch = Type.Object({
  schemas: Type.Array(Type.String()),
  Operations: Type.Array(
    Type.Object({
      op: Type.String(),
      path: Maybe(Type.String({ maxLength: 1024 })),
      value: Type.Optional(Type.Unknown()),
    }),
    { minItems: 1, maxItems: 1000 },
  ),
});
export type ScimPatch = Static<typeof ScimPatch>;

export const ScimListQuery = Type.Object({
  filter: Type.Optional(Type.String({ maxLength: 4096 })),
  startIndex: Type.Optional(Type.Integer()),
  count: Type.Optional(Type.Integer()),
});
export type ScimListQuery = Static<typeof ScimListQuery>;

export const ScimIdParams = Type.Object({ id: Type.String() });

// Responses.

const Meta = Type.Object({ resourceType: Type.String(), created: Type.String(), lastModified: Type.String(), location: Type.String() });
const ResponseValue = Type.Object({ value: Type.String(), type: Type.Optional(Type.String()), primary: Type.Optional(Type.Boolean()), display: Type.Optional(Type.String()), $ref: Type.Optional(Type.String()) });

export const ScimUser = Type.Object({
  schemas: Type.Array(Type.String()),
  id: Type.String(),
  externalId: Type.Optional(Type.String()),
  userName: Type.String(),
  name: Type.Object({ formatted: Type.String(), givenName: Type.String(), familyName: Type.String() }),
  displayName: Type.String(),
  emails: Type.Array(ResponseValue),
  active: Type.Boolean(),
  photos: Type.Optional(Type.Array(ResponseValue)),
  groups: Type.Array(ResponseValue),
  meta: Meta,
});
export type ScimUser = Static<typeof ScimUser>;

export const ScimGroup = Type.Object({
  schemas: Type.Array(Type.String()),
  id: Type.String(),
  displayName: Type.String(),
  members: Type.Array(ResponseValue),
  meta: Meta,
});
export type ScimGroup = Static<typeof ScimGroup>;

export const ScimListResponse = <T extends typeof ScimUser | typeof ScimGroup>(resource: T) =>
  Type.Object({
    schemas: Type.Array(Type.String()),
    totalResults: Type.Integer(),
    itemsPerPage: Type.Integer(),
    startIndex: Type.Integer(),
    Resources: Type.Array(resource),
  });
