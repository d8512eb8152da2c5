import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

/**
 * Request validation with the error list FastAPI clients expect:
 * 422 `{"detail":[{"type","loc","msg","input"}]}`.
 *
 * Bodies are not coerced (pydantic refuses a number where a string is declared);
 * query, path and header values arrive as strings and are coerced, as FastAPI does.
 */
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const shared: Options = { allErrors: true, verbose: true, useDefaults: true, strict: false, removeAdditional: false };
const bodyAjv = addFormats(new Ajv({ ...shared, coerceTypes: false }));
const paramAjv = addFormats(new Ajv({ ...shared, coerceTypes: 'array' }));

/**
 * Validators are compiled on a route's first request rather than at start-up:
 * compiling every route's schemas up front was most of the time to ready.
 */
export const schemaCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  let compiled: ValidateFunction | undefined;
  const validate = (data: unknown) => {
    compiled ??= (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema as object);
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  };
  validate.errors = null as ValidateFunction['errors'];
  return validate;
};

export interface ValidationDetail {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

/** Longest input a 422 echoes, in characters (of its JSON for objects and arrays). */
export const ECHOED_INPUT_MAX = 256;
/** Ends an echoed input that was cut at ECHOED_INPUT_MAX. */
export const TRUNCATED_MARKER = '…[truncated]';

/**
 * An input as a 422 echoes it: as sent when short, else its first ECHOED_INPUT_MAX characters
 * (of its JSON text, for an object or array) followed by TRUNCATED_MARKER. Pydantic echoes the
 * whole input; a large body echoed back would double what a request costs the server.
 */
export function clippedInput(value: unknown): unknown {
  if (typeof value === 'string') return value.length <= ECHOED_INPUT_MAX ? value : value.slice(0, ECHOED_INPUT_MAX) + TRUNCATED_MARKER;
  if (value === null || typeof value !== 'object') return value;
  const json = jsonPrefix(value, ECHOED_INPUT_MAX);
  return json.length <= ECHOED_INPUT_MAX ? value : json.slice(0, ECHOED_INPUT_MAX) + TRUNCATED_MARKER;
}

/** A 422's detail list with every echoed input, key in `loc` and context value clipped (fields in their order). */
export function clippedDetails(detail: unknown): unknown {
  if (!Array.isArray(detail)) return detail;
  return detail.map((entry: unknown) => {
    if (entry === null || typeof entry !== 'object') return entry;
    const clipped: Record<string, unknown> = {};
    for (const [field, value] of Object.entries(entry)) {
      if (field === 'input') clipped.input = clippedInput(value);
      else if (field === 'loc' && Array.isArray(value)) clipped.loc = value.map(clippedInput);
      else if (field === 'ctx' && value !== null && typeof value === 'object') {
        clipped.ctx = Object.fromEntries(Object.entries(value).map(([key, item]) => [key, clippedInput(item)]));
      } else clipped[field] = value;
    }
    return clipped;
  });
}

/** The JSON text of a value, written only until it is longer than `max` (a large input costs no more than a small one). */
function jsonPrefix(value: unknown, max: number): string {
  let out = '';
  const write = (item: unknown): boolean => {
    if (typeof item === 'string') out += JSON.stringify(item.length > max ? item.slice(0, max + 1) : item);
    else if (Array.isArray(item)) {
      out += '[';
      for (let i = 0; i < item.length; i++) {
        if (i > 0) out += ',';
        if (!write(item[i])) return false;
      }
      out += ']';
    } else if (item !== null && typeof item === 'object') {
      out += '{';
      let first = true;
      for (const key in item) {
        out += `${first ? '' : ','}${JSON.stringify(key.length > max ? key.slice(0, max + 1) : key)}:`;
        first = false;
        if (!write((item as Record<string, unknown>)[key])) return false;
      }
      out += '}';
    } else out += String(JSON.stringify(item) ?? null);
    return out.length <= max;
  };
  write(value);
  return out;
}

const LOC_ROOT: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

const TYPE_ERRORS: Record<string, [string, string]> = {
  string: ['string_type', 'Input should be a valid string'],
  integer: ['int_type', 'Input should be a valid integer'],
  number: ['float_type', 'Input should be a valid number'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  object: ['dict_type', 'Input should be a valid dictionary'],
  array: ['list_type', 'Input should be a valid list'],
  null: ['none_required', 'Input should be None'],
};

function pathOf(instancePath: string): (string | number)[] {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

function quoteList(values: unknown[]): string {
  const quoted = values.map((v) => (typeof v === 'string' ? `'${v}'` : JSON.stringify(v)));
  return quoted.length <= 1 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
}

function detailOf(error: ErrorObject, root: string): ValidationDetail | null {
  const loc = [root, ...pathOf(error.instancePath)];
  const input = error.data;
  switch (error.keyword) {
    case 'required': {
      const missing = (error.params as { missingProperty: string }).missingProperty;
      return { type: 'missing', loc: [...loc, missing], msg: 'Field required', input: input ?? null };
    }
    case 'type': {
      const expected = String((error.params as { type: string }).type).split(',')[0];
      if ((input === undefined || input === null) && loc.length === 1) return { type: 'missing', loc, msg: 'Field required', input: null };
      if (expected === 'null') return null; // the non-null branch of a nullable field says what was wrong
      const [type, msg] = TYPE_ERRORS[expected] ?? ['value_error', error.message ?? 'Invalid value'];
      if (expected === 'integer' && typeof input === 'number') {
        return { type: 'int_from_float', loc, msg: 'Input should be a valid integer, got a number with a fractional part', input };
      }
      return { type, loc, msg, input };
    }
    case 'enum': {
      const allowed = (error.params as { allowedValues: unknown[] }).allowedValues;
      return { type: 'enum', loc, msg: `Input should be ${quoteList(allowed)}`, input, ctx: { expected: quoteList(allowed) } };
    }
    case 'const': {
      const allowed = (error.params as { allowedValue: unknown }).allowedValue;
      return { type: 'literal_error', loc, msg: `Input should be ${quoteList([allowed])}`, input };
    }
    case 'minLength': {
      const n = (error.params as { limit: number }).limit;
      return { type: 'string_too_short', loc, msg: `String should have at least ${n} character${n === 1 ? '' : 's'}`, input, ctx: { min_length: n } };
    }
    case 'maxLength': {
      const n = (error.params as { limit: number }).limit;
      return { type: 'string_too_long', loc, msg: `String should have at most ${n} character${n === 1 ? '' : 's'}`, input, ctx: { max_length: n } };
    }
    case 'minimum':
    case 'exclusiveMinimum': {
      const n = (error.params as { limit: number }).limit;
      const inclusive = error.keyword === 'minimum';
      return {
        type: inclusive ? 'greater_than_equal' : 'greater_than',
        loc,
        msg: `Input should be greater than${inclusive ? ' or equal to' : ''} ${n}`,
        input,
      };
    }
    case 'maximum':
    case 'exclusiveMaximum': {
      const n = (error.params as { limit: number }).limit;
      const inclusive = error.keyword === 'maximum';
      return { type: inclusive ? 'less_than_equal' : 'less_than', loc, msg: `Input should be less than${inclusive ? ' or equal to' : ''} ${n}`, input };
    }
    case 'anyOf':
    case 'oneOf':
      return null; // reported through the branch errors
    default:
      return { type: 'value_error', loc, msg: `Value error, ${error.message ?? 'invalid value'}`, input };
  }
}

/** Maps Ajv errors to FastAPI's detail list, one entry per location. */
export function validationDetails(errors: ErrorObject[], httpPart: string): ValidationDetail[] {
  const root = LOC_ROOT[httpPart] ?? httpPart;
  const seen = new Set<string>();
  const details: ValidationDetail[] = [];
  for (const error of errors) {
    const detail = detailOf(error, root);
    if (!detail) continue;
    const key = JSON.stringify(detail.loc);
    if (seen.has(key)) continue;
    seen.add(key);
    details.push(detail);
  }
  if (details.length === 0 && errors.length > 0) {
    const first = errors[0];
    details.push({ type: 'value_error', loc: [root, ...pathOf(first.instancePath)], msg: first.message ?? 'Invalid value', input: first.data });
  }
  return details;
}

/**
 * A check of a value against a route's body schema, with the routes' validator and
 * rules (no coercion; defaults are filled into a copy only): the first problem as
 * `field.path: message`, or null. Settings use it so that an import is held to the
 * form that writes the key.
 */
export function schemaProblem(schema: object): (value: unknown) => string | null {
  let compiled: ValidateFunction | undefined;
  return (value) => {
    compiled ??= bodyAjv.compile(schema);
    if (compiled(structuredClone(value))) return null;
    const [first] = validationDetails(compiled.errors ?? [], 'value');
    const path = first.loc.slice(1).join('.');
    return path ? `${path}: ${first.msg}` : first.msg;
  };
}
