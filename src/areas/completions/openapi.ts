import { type Json, isObject } from '../chats/history.js';

/**
 * OpenAPI documents as tools (utils/tools.py convert_openapi_to_tool_payload and
 * execute_tool_server): every operation with an `operationId` is one function
 * whose parameters are the operation's path, query and header parameters and its
 * JSON body's properties; a call becomes the HTTP request the document describes.
 */
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** A `$ref` into `components` resolved (circular references become `{}`). */
function resolveSchema(schema: unknown, components: Json, seen = new Set<string>()): Json {
  if (!isObject(schema)) return {};
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').at(-1) ?? '';
    if (seen.has(name)) return {};
    seen.add(name);
    let target: unknown = components;
    for (const part of schema.$ref.replace(/^#?\/?/, '').split('/').slice(1)) target = isObject(target) ? target[part] : undefined;
    return resolveSchema(target, components, seen);
  }
  const resolved: Json = structuredClone(schema);
  // Unlike the reference, nested schemas keep the references of their path, so a schema that
  // contains itself (a hostile or recursive document) ends instead of recursing without end.
  if (isObject(resolved.properties)) {
    for (const [key, value] of Object.entries(resolved.properties)) resolved.properties[key] = resolveSchema(value, components, new Set(seen));
  }
  if (resolved.items !== undefined) resolved.items = resolveSchema(resolved.items, components, new Set(seen));
  for (const keyword of ['oneOf', 'anyOf', 'allOf']) {
    if (Array.isArray(resolved[keyword])) resolved[keyword] = (resolved[keyword] as unknown[]).map((inner) => resolveSchema(inner, components, new Set(seen)));
  }
  return resolved;
}

interface Operation {
  path: string;
  method: string;
  operation: Json;
  /** Path-level parameters overridden by the operation's (same name and `in`). */
  parameters: Json[];
}

function* operations(doc: Json): Generator<Operation> {
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const [path, methods] of Object.entries(paths)) {
    if (!isObject(methods)) continue;
    const shared = Array.isArray(methods.parameters) ? methods.parameters.filter(isObject) : [];
    for (const [method, operation] of Object.entries(methods)) {
      if (!HTTP_METHODS.includes(method) || !isObject(operation) || typeof operation.operationId !== 'string' || !operation.operationId) continue;
      const merged = new Map<string, Json>();
      for (const param of [...shared, ...(Array.isArray(operation.parameters) ? operation.parameters.filter(isObject) : [])]) {
        if (typeof param.name === 'string' && param.name) merged.set(`${param.name}\u0000${String(param.in ?? '')}`, param);
      }
      yield { path, method, operation, parameters: [...merged.values()] };
    }
  }
}

/** The function specs of a document's operations. */
export function openApiToolSpecs(doc: Json): Json[] {
  const components = isObject(doc.components) ? doc.components : {};
  const specs: Json[] = [];
  for (const { operation, parameters } of operations(doc)) {
    const properties: Json = {};
    let required: string[] = [];
    for (const param of parameters) {
      const schema = isObject(param.schema) ? param.schema : {};
      let description = typeof schema.description === 'string' && schema.description ? schema.description : typeof param.description === 'string' ? param.description : '';
      if (Array.isArray(schema.enum) && schema.enum.length > 0) description += `. Possible values: ${schema.enum.map(String).join(', ')}`;
      const property: Json = { type: typeof schema.type === 'string' && schema.type ? schema.type : 'string', description };
      if (schema.type === 'array' && schema.items !== undefined) property.items = schema.items;
      properties[String(param.name)] = property;
      if (param.required) required.push(String(param.name));
    }
    let parameterSchema: Json = { type: 'object', properties, required };
    const body = isObject(operation.requestBody) && isObject(operation.requestBody.content) ? operation.requestBody.content['application/json'] : undefined;
    if (isObject(body) && body.schema !== undefined) {
      const resolved = resolveSchema(body.schema, components);
      if (isObject(resolved.properties) && Object.keys(resolved.properties).length > 0) {
        Object.assign(properties, resolved.properties);
        if (Array.isArray(resolved.required)) required = [...new Set([...required, ...resolved.required.map(String)])];
        parameterSchema = { type: 'object', properties, required };
      } else if (resolved.type === 'array') parameterSchema = resolved;
    }
    const description = typeof operation.description === 'string' ? operation.description : typeof operation.summary === 'string' ? operation.summary : 'No description available.';
    specs.push({ name: operation.operationId, description, parameters: parameterSchema });
  }
  return specs;
}

export interface OperationRequest {
  method: string;
  url: string;
  /** JSON body, for operations that take one. */
  body?: string;
}

/** The HTTP request of a call to `name` with the model's arguments, against `baseUrl`. Throws when the document has no such operation. */
export function operationRequest(doc: Json, baseUrl: string, name: string, args: Json): OperationRequest {
  const found = [...operations(doc)].find((op) => op.operation.operationId === name);
  if (!found) throw new Error(`No matching route found for operationId: ${name}`);
  let path = found.path;
  const query = new URLSearchParams();
  for (const param of found.parameters) {
    const key = String(param.name);
    if (!(key in args)) continue;
    const value = args[key];
    if (param.in === 'path') path = path.replaceAll(`{${key}}`, encodeURIComponent(String(value)));
    else if (param.in === 'query') {
      // Models sometimes send "" for an optional parameter instead of leaving it out.
      if (value === null || value === undefined || (value === '' && !param.required)) continue;
      for (const item of Array.isArray(value) ? value : [value]) query.append(key, typeof item === 'string' ? item : pythonText(item));
    }
  }
  const search = query.toString();
  const url = `${baseUrl.replace(/\/+$/, '')}${path}${search ? `?${search}` : ''}`;
  const method = found.method.toUpperCase();
  const takesBody = isObject(found.operation.requestBody) && isObject(found.operation.requestBody.content);
  const withBody = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method);
  return { method, url, ...(withBody ? { body: JSON.stringify(takesBody ? args : {}) } : {}) };
}

/** How Python's urlencode writes a non-string value (True, 1.5). */
function pythonText(value: unknown): string {
  if (value === true) return 'True';
  if (value === false) return 'False';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** What the model reads of a tool server's answer (middleware.py process_tool_result): JSON pretty-printed, lists as `{results}`, text as is. */
export function toolServerText(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(Array.isArray(value) ? { results: value } : value, null, 2);
}

/** A server's document URL: `path` when it is a full URL, else joined to the server's URL. */
export function documentUrl(url: string, path: string | null | undefined): string {
  const target = path || 'openapi.json';
  if (target.includes('://')) return target;
  return `${url.replace(/\/+$/, '')}${target.startsWith('/') ? '' : '/'}${target}`;
}
