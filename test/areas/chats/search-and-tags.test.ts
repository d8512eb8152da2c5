import { beforeEach, describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { type Account, addUser, as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { chain, newChat } from './fixtures.js';

let user: Account;

const world = useServer({ admin: 'Search Admin' });

beforeEach(async () => {
  user = await addUser(world.api, world.admin, 'user', 'Searcher');
  world.takeEvents();
});
const tag = (id: string, name: string, owner: Account) => ({ id, name, user_id: owner.id, meta: null });

describe('tags', () => {
  it('adds a tag (id from the name), lists it, and removes it with the tag once no chat carries it', async () => {
    const a = await newChat(world.api, user, { title: 'a' });
    const b = await newChat(world.api, user, { title: 'b' });
    world.takeEvents();
    const added = await world.api.post(`/api/v1/chats/${a.id}/tags`, { name: 'Deep Work' }, as(user));
    expect(added.status, added.text).toBe(200);
    expect(added.body).toEqual([tag('deep_work', 'Deep Work', user)]);
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.tag_added', subject: { type: 'chat', id: a.id }, data: { tag: 'Deep Work' } }]);
    // Adding it again changes nothing and publishes nothing.
    expect((await world.api.post(`/api/v1/chats/${a.id}/tags`, { name: 'deep work' }, as(user))).body).toEqual([tag('deep_work', 'Deep Work', user)]);
    expect(world.takeEvents()).toEqual([]);
    await world.api.post(`/api/v1/chats/${b.id}/tags`, { name: 'Deep Work' }, as(user));
    expect((await world.api.get(`/api/v1/chats/${a.id}`, as(user))).body.meta).toEqual({ tags: ['deep_work'] });
    expect((await world.api.get(`/api/v1/chats/${b.id}/tags`, as(user))).body).toEqual([tag('deep_work', 'Deep Work', user)]);
    expect((await world.api.get('/api/v1/chats/all/tags', as(user))).body).toEqual([tag('deep_work', 'Deep Work', user)]);

    const tagged = await world.api.post('/api/v1/chats/tags', { name: 'Deep Work' }, as(user));
    expect(tagged.body.map((c: { id: string }) => c.id).sort()).toEqual([a.id, b.id].sort());

    world.takeEvents();
    const removed = await world.api.request('DELETE', `/api/v1/chats/${a.id}/tags`, { name: 'Deep Work' }, as(user));
    expect(removed.body).toEqual([]);
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.tag_removed', data: { tag: 'Deep Work' } }]);
    expect((await world.api.get('/api/v1/chats/all/tags', as(user))).body).toHaveLength(1);
    await world.api.request('DELETE', `/api/v1/chats/${b.id}/tags`, { name: 'Deep Work' }, as(user));
    expect((await world.api.get('/api/v1/chats/all/tags', as(user))).body).toEqual([]);
  });

  it('refuses the tag "None" (400) and a missing name (422)', async () => {
    const chat = await newChat(world.api, user);
    const res = await world.api.post(`/api/v1/chats/${chat.id}/tags`, { name: 'None' }, as(user));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: ERROR.DEFAULT("Tag name cannot be 'None'") });
    expect((await world.api.post(`/api/v1/chats/${chat.id}/tags`, {}, as(user))).status).toBe(422);
  });

  it('drops tags only archived chats carry, brings them back with the chat, and forgets tags no chat has', async () => {
    const chat = await newChat(world.api, user);
    await world.api.post(`/api/v1/chats/${chat.id}/tags`, { name: 'later' }, as(user));
    await world.api.post(`/api/v1/chats/${chat.id}/archive`, undefined, as(user));
    expect((await world.api.get('/api/v1/chats/all/tags', as(user))).body).toEqual([]);
    await world.api.post(`/api/v1/chats/${chat.id}/archive`, undefined, as(user));
    expect((await world.api.get('/api/v1/chats/all/tags', as(user))).body).toEqual([tag('later', 'later', user)]);
    await world.api.delete(`/api/v1/chats/${chat.id}`, as(user));
    expect((await world.api.get('/api/v1/chats/all/tags', as(user))).body).toEqual([]);
    const ghost = await newChat(world.api, user);
    await world.api.post(`/api/v1/chats/${ghost.id}/tags`, { name: 'ghost' }, as(user));
    await world.api.request('DELETE', `/api/v1/chats/${ghost.id}/tags`, { name: 'ghost' }, as(user));
    await world.server.parley.core.db.insertInto('tag').values({ id: 'stale', name: 'stale', user_id: user.id, meta: null }).execute();
    expect((await world.api.post('/api/v1/chats/tags', { name: 'stale' }, as(user))).body).toEqual([]);
    expect((await world.api.get('/api/v1/chats/all/tags', as(user))).body).toEqual([]);
  });
});

describe('GET /api/v1/chats/search', () => {
  let chats: Record<string, { id: string }>;

  beforeEach(async () => {
    const folder = (await world.api.post('/api/v1/folders/', { name: 'Road Trips' }, as(user))).body;
    const sub = (await world.api.post('/api/v1/folders/', { name: 'Alps', parent_id: folder.id }, as(user))).body;
    chats = {
      recipes: await newChat(world.api, user, { title: 'Pasta recipes', history: chain(['u1', 'user', 'How long do I boil spaghetti?'], ['a1', 'assistant', 'About nine minutes in salted water.']) }),
      travel: await newChat(world.api, user, { title: 'Trip plan', history: chain(['u1', 'user', 'Plan a trip through the Alps with lots of pasta']) }, { folder_id: sub.id }),
      taxes: await newChat(world.api, user, { title: 'Taxes 100% done', history: chain(['u1', 'user', 'Deadline for taxes?']) }),
      old: await newChat(world.api, user, { title: 'Old pasta chat' }),
    };
    await world.api.post(`/api/v1/chats/${chats.recipes.id}/tags`, { name: 'food' }, as(user));
    await world.api.post(`/api/v1/chats/${chats.travel.id}/tags`, { name: 'food' }, as(user));
    await world.api.post(`/api/v1/chats/${chats.travel.id}/tags`, { name: 'travel' }, as(user));
    await world.api.post(`/api/v1/chats/${chats.taxes.id}/pin`, undefined, as(user));
    await world.api.post(`/api/v1/chats/${chats.taxes.id}/share`, undefined, as(user));
    await world.api.post(`/api/v1/chats/${chats.old.id}/archive`, undefined, as(user));
  });

  const search = async (text: string) => {
    const res = await world.api.get(`/api/v1/chats/search?text=${encodeURIComponent(text)}`, as(user));
    expect(res.status, res.text).toBe(200);
    return res.body as { id: string; title: string; snippet: string | null }[];
  };
  const ids = async (text: string) => (await search(text)).map((c) => c.id).sort();
  const of = (...names: string[]) => names.map((n) => chats[n].id).sort();

  it('matches titles and message text in any case, leaving archived chats out, with a snippet of the message', async () => {
    expect(await ids('PASTA')).toEqual(of('recipes', 'travel'));
    const [hit] = await search('nine minutes');
    expect(hit).toMatchObject({ id: chats.recipes.id, title: 'Pasta recipes', snippet: 'About nine minutes in salted water.', active: false });
    expect((await search('Pasta recipes'))[0].snippet).toBeNull();
    expect(await ids('100%')).toEqual(of('taxes'));
    expect(await ids('0_')).toEqual([]);
  });

  it('applies tag:, folder:, pinned:, archived: and shared: filters', async () => {
    expect(await ids('tag:food')).toEqual(of('recipes', 'travel'));
    expect(await ids('tag:food tag:travel')).toEqual(of('travel'));
    expect(await ids('tag:none')).toEqual(of('taxes'));
    expect(await ids('tag:food alps')).toEqual(of('travel'));
    expect(await ids('folder:road_trips')).toEqual(of('travel'));
    expect(await ids('folder:alps')).toEqual(of('travel'));
    expect(await ids('folder:nowhere')).toEqual([]);
    expect(await ids('pinned:true')).toEqual(of('taxes'));
    expect(await ids('pinned:false')).toEqual(of('recipes', 'travel'));
    expect(await ids('archived:true pasta')).toEqual(of('old'));
    expect(await ids('shared:true')).toEqual(of('taxes'));
    expect(await ids('shared:false tag:food')).toEqual(of('recipes', 'travel'));
  });

  it('lists everything unarchived for empty text, pages by 60, and needs the text (422)', async () => {
    expect(await ids('  ')).toEqual(of('recipes', 'travel', 'taxes'));
    expect((await world.api.get('/api/v1/chats/search?text=pasta&page=2', as(user))).body).toEqual([]);
    expect((await world.api.get('/api/v1/chats/search', as(user))).status).toBe(422);
    const other = await addUser(world.api, world.admin, 'user', 'Other Searcher');
    expect((await world.api.get('/api/v1/chats/search?text=pasta', as(other))).body).toEqual([]);
  });

  it('forgets a tag when a lone tag: search finds nothing', async () => {
    await world.server.parley.core.db.insertInto('tag').values({ id: 'orphan', name: 'orphan', user_id: user.id, meta: null }).execute();
    expect(await ids('tag:orphan')).toEqual([]);
    const tags = (await world.api.get('/api/v1/chats/all/tags', as(user))).body.map((t: { id: string }) => t.id);
    expect(tags).not.toContain('orphan');
    expect(tags).toContain('food');
  });
});
