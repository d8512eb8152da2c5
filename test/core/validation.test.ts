import { Type } from '@sinclair/typebox';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpError } from '../../src/core/http/errors.js';
import { Maybe } from '../../src/core/http/schema.js';
import { type App, createHttpServer } from '../../src/core/http/server.js';
import { clippedDetails } from '../../src/core/http/validation.js';

/** The 422 detail list must look like FastAPI's, since clients parse it. */
describe('validation errors', () => {
  let app: App;
  let base: string;

  beforeAll(async () => {
    app = await createHttpServer({ logger: pino({ level: 'silent' }), corsAllowOrigin: ['*'], version: 'test' });
    app.post(
      '/form',
      {
        schema: {
          body: Type.Object({
            name: Type.String(),
            count: Type.Integer(),
            ratio: Type.Optional(Type.Number()),
            flag: Maybe(Type.Boolean()),
            role: Type.Optional(Type.Union([Type.Literal('admin'), Type.Literal('user')])),
            tags: Type.Optional(Type.Array(Type.String())),
          }),
        },
      },
      async (request) => request.body,
    );
    app.get('/items', { schema: { querystring: Type.Object({ page: Type.Integer({ minimum: 1 }) }) } }, async (request) => request.query);
    app.get('/teapot', async () => {
      throw new HttpError(418, 'short and stout');
    });
    app.get('/boom', async () => {
      throw new Error('secret internals');
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(async () => app.close());

  const post = async (body: string, contentType = 'application/json') => {
    const res = await fetch(`${base}/form`, { method: 'POST', headers: { 'content-type': contentType }, body });
    return { status: res.status, body: await res.json() };
  };

  it('reports a missing field with its location and the input', async () => {
    const res = await post(JSON.stringify({ count: 1 }));
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: { count: 1 } }]);
  });

  it('reports every invalid field, without coercing body types', async () => {
    const res = await post(JSON.stringify({ name: 5, count: '3', flag: 'yes', role: 'root', tags: ['a', 2] }));
    expect(res.status).toBe(422);
    const byLoc = Object.fromEntries(res.body.detail.map((d: { loc: unknown[] }) => [d.loc.join('.'), d]));
    expect(byLoc['body.name']).toMatchObject({ type: 'string_type', msg: 'Input should be a valid string', input: 5 });
    expect(byLoc['body.count']).toMatchObject({ type: 'int_type', input: '3' });
    expect(byLoc['body.flag']).toMatchObject({ type: 'bool_type', input: 'yes' });
    expect(byLoc['body.role'].input).toBe('root');
    expect(byLoc['body.tags.1']).toMatchObject({ type: 'string_type', input: 2 });
  });

  it('cuts every echoed input (and key) longer than 256 characters, with a marker', async () => {
    const long = 'y'.repeat(1000);
    const res = await post(JSON.stringify({ name: { [long]: long }, count: long, tags: [long, 1], [long]: 1 }));
    expect(res.status).toBe(422);
    const byLoc = Object.fromEntries(res.body.detail.map((d: { loc: unknown[] }) => [d.loc.join('.'), d]));
    expect(byLoc['body.count'].input).toBe(`${'y'.repeat(256)}…[truncated]`);
    expect(byLoc['body.name'].input).toBe(`{"${'y'.repeat(254)}…[truncated]`);
    expect(byLoc['body.tags.1'].input).toBe(1);
    for (const detail of res.body.detail) expect(JSON.stringify(detail).length).toBeLessThan(900);
    // A key of the body in `loc` is cut the same way, the fields keep their order.
    const [keyed] = clippedDetails([{ type: 'missing', loc: ['body', long], msg: 'Field required', input: null }]) as object[];
    expect(Object.entries(keyed)).toEqual([['type', 'missing'], ['loc', ['body', `${'y'.repeat(256)}…[truncated]`]], ['msg', 'Field required'], ['input', null]]);
  });

  it('accepts null for a nullable field and a valid body as sent', async () => {
    const res = await post(JSON.stringify({ name: 'a', count: 2, flag: null }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: 'a', count: 2, flag: null });
  });

  it('reports a fractional number for an integer field', async () => {
    const res = await post(JSON.stringify({ name: 'a', count: 1.5 }));
    expect(res.body.detail[0]).toMatchObject({ type: 'int_from_float', loc: ['body', 'count'] });
  });

  it('reports a missing body as a missing field at the body', async () => {
    const res = await fetch(`${base}/form`, { method: 'POST' });
    expect(res.status).toBe(422);
    expect((await res.json()).detail).toEqual([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
  });

  it('reports broken JSON as json_invalid', async () => {
    const res = await post('{"name": ');
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error' });
  });

  it('coerces and checks query parameters', async () => {
    const ok = await fetch(`${base}/items?page=2`);
    expect(await ok.json()).toEqual({ page: 2 });
    const bad = await fetch(`${base}/items?page=0`);
    expect(bad.status).toBe(422);
    expect((await bad.json()).detail[0]).toMatchObject({ type: 'greater_than_equal', loc: ['query', 'page'], input: 0 });
    const missing = await fetch(`${base}/items`);
    expect((await missing.json()).detail[0]).toMatchObject({ type: 'missing', loc: ['query', 'page'] });
  });

  it('shapes thrown HTTP errors and hides unexpected ones', async () => {
    const teapot = await fetch(`${base}/teapot`);
    expect(teapot.status).toBe(418);
    expect(await teapot.json()).toEqual({ detail: 'short and stout' });
    const boom = await fetch(`${base}/boom`);
    expect(boom.status).toBe(500);
    expect(await boom.json()).toEqual({ detail: 'Internal Server Error' });
  });
});
