import { type Kysely, sql } from 'kysely';

/** Users, credentials, groups, access grants and the config store (issue 2). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('user')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('username', 'text')
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('profile_image_url', 'text')
    .addColumn('profile_banner_image_url', 'text')
    .addColumn('bio', 'text')
    .addColumn('gender', 'text')
    .addColumn('date_of_birth', 'text')
    .addColumn('timezone', 'text')
    .addColumn('presence_state', 'text')
    .addColumn('status_emoji', 'text')
    .addColumn('status_message', 'text')
    .addColumn('status_expires_at', 'bigint')
    .addColumn('info', 'text')
    .addColumn('variables', 'text')
    .addColumn('settings', 'text')
    .addColumn('oauth', 'text')
    .addColumn('scim', 'text')
    .addColumn('last_active_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // E-mail addresses are unique regardless of case, as the reference's normalised index.
  await db.schema.createIndex('user_email_lower_idx').on('user').unique().expression(sql`lower(email)`).execute();
  await db.schema.createIndex('user_created_at_idx').on('user').column('created_at').execute();

  await db.schema
    .createTable('auth')
    .addColumn('id', 'text', (c) => c.primaryKey().references('user.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('password', 'text', (c) => c.notNull())
    .addColumn('active', 'boolean', (c) => c.notNull().defaultTo(true))
    .execute();

  await db.schema
    .createTable('api_key')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull().unique())
    .addColumn('data', 'text')
    .addColumn('expires_at', 'bigint')
    .addColumn('last_used_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('api_key_user_idx').on('api_key').column('user_id').execute();

  await db.schema
    .createTable('group')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('data', 'text')
    .addColumn('meta', 'text')
    .addColumn('permissions', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('group_member')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('group_id', 'text', (c) => c.notNull().references('group.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('group_member_group_user_uq', ['group_id', 'user_id'])
    .execute();
  await db.schema.createIndex('group_member_user_idx').on('group_member').column('user_id').execute();

  await db.schema
    .createTable('access_grant')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('principal_type', 'text', (c) => c.notNull())
    .addColumn('principal_id', 'text', (c) => c.notNull())
    .addColumn('permission', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('access_grant_uq', ['resource_type', 'resource_id', 'principal_type', 'principal_id', 'permission'])
    .execute();
  await db.schema.createIndex('access_grant_resource_idx').on('access_grant').columns(['resource_type', 'resource_id']).execute();
  await db.schema.createIndex('access_grant_principal_idx').on('access_grant').columns(['principal_type', 'principal_id']).execute();

  await db.schema
    .createTable('config')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint')
    .execute();

  await db.schema
    .createTable('oauth_session')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('token', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}
