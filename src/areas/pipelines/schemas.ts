import { Type } from '@sinclair/typebox';
import { JsonObject } from '../../core/http/schema.js';

/** Forms of `/api/v1/pipelines` (routers/pipelines.py); a Pipelines server's own answers are relayed as they are. */

export const AddPipelineForm = Type.Object({ url: Type.String(), urlIdx: Type.Integer() });

export const DeletePipelineForm = Type.Object({ id: Type.String(), urlIdx: Type.Integer() });

/** `urlIdx` is optional on the list of one server's pipelines (a missing one finds no server: 404). */
export const OptionalUrlIdxQuery = Type.Object({ urlIdx: Type.Optional(Type.Integer()) });

/** The valves routes declare `urlIdx: Optional[int]` without a default, which FastAPI requires. */
export const UrlIdxQuery = Type.Object({ urlIdx: Type.Integer() });

export const PipelineIdParams = Type.Object({ pipeline_id: Type.String() });

export const PipelineServersResponse = Type.Object({ data: Type.Array(Type.Object({ url: Type.String(), idx: Type.Integer() })) });

export const ValvesForm = JsonObject();
