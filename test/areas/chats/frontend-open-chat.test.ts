import { describe, expect, it } from 'vitest';
import { as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { chain, newChat } from './fixtures.js';

/**
 * What the web frontend reads when it opens a stored chat (a reload of `/c/{id}`,
 * or a click in the sidebar): the chat, its tags, its running tasks, then the tools,
 * functions and skills lists (its `setDefaults`). If any of these fails the page
 * gives up on the chat and goes back to `/` — found in the browser run with a tool
 * (docs/chat-pipeline.md), where `/api/v1/functions/` and `/api/v1/skills/`
 * answered 404.
 */
const world = useServer({ admin: 'Open Chat Admin', users: { alice: ['user', 'Alice Opens'], pending: ['pending', 'Pending Opens'] } });

const toolAnswer = {
  model: 'fake-tool-model',
  done: true,
  statusHistory: [{ description: 'Added 19 and 23', done: true }],
  output: [
    { type: 'function_call', id: 'call_1', call_id: 'call_1', name: 'add', arguments: '{"a":19,"b":23}', status: 'completed' },
    { type: 'function_call_output', id: 'fco_1', call_id: 'call_1', output: [{ type: 'input_text', text: '19 + 23 = 42' }], status: 'completed' },
    { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'It is 42.' }] },
  ],
};

describe('opening a stored chat in the web frontend', () => {
  it('answers every read the chat page makes, for a plain user', async () => {
    const history = chain(['u1', 'user', 'Please add 19 and 23.'], ['a1', 'assistant', 'It is 42.', toolAnswer]);
    const chat = await newChat(world.api, world.alice, { models: ['fake-tool-model'], history });

    const reads = [`/api/v1/chats/${chat.id}`, `/api/v1/chats/${chat.id}/tags`, `/api/tasks/chat/${chat.id}`, '/api/v1/tools/', '/api/v1/functions/', '/api/v1/skills/'];
    for (const path of reads) {
      const res = await world.api.get(path, as(world.alice));
      expect(res.status, `${path}: ${res.text}`).toBe(200);
    }
    expect((await world.api.get(`/api/v1/chats/${chat.id}`, as(world.alice))).body.chat.history.messages.a1.output).toEqual(toolAnswer.output);
  });

  it('lists no functions and no skills when none are installed', async () => {
    for (const account of [world.alice, world.admin]) {
      expect((await world.api.get('/api/v1/functions/', as(account))).body).toEqual([]);
      expect((await world.api.get('/api/v1/skills/', as(account))).body).toEqual([]);
    }
  });

  it('refuses both lists to pending users and anonymous callers, as the reference (verified users only)', async () => {
    for (const path of ['/api/v1/functions/', '/api/v1/skills/']) {
      expect((await world.api.get(path, as(world.pending))).status).toBe(401);
      expect((await world.api.get(path, as(null))).status).toBe(401);
    }
  });
});
