import { Type } from '@sinclair/typebox';
import { JsonObject, StatusResponse } from '../../core/http/schema.js';

/** Shapes of the app-level routes (main.py). */

export const HealthResponse = StatusResponse;

export const VersionResponse = Type.Object({ version: Type.String(), deployment_id: Type.String() });

export const VersionUpdatesResponse = Type.Object({ current: Type.String(), latest: Type.String() });

/** version → `{date, <section>: [{title, content, raw}]}`. */
export const ChangelogResponse = JsonObject();

/** Its fields depend on who asks (public, pending, member); see SystemService.appConfig. */
export const AppConfigResponse = JsonObject();

export const UsageResponse = Type.Object({ model_ids: Type.Array(Type.String()), user_count: Type.Integer() });

export const ManifestResponse = JsonObject();
