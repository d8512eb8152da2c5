import { beforeAll, describe, expect, it } from 'vitest';
import { fakeModel } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { outputText, stamp, useBrowser, webRequest } from './setup.js';

/**
 * The frontend drops events of a chat it does not know yet, so for a new chat
 * the HTTP reply (with the chat id) must arrive before the first socket event,
 * even when the model answers instantly (contract §10, gotcha 1).
 */
describe('reply before the first event', () => {
  const world = useServer({ fakes: fakeModel(), admin: 'Ordering Admin' });
  const browser = useBrowser(world);
  beforeAll(() => {
    world.model.script = () => ({ text: 'Instant.' });
  });

  for (const stream of [true, false]) {
    it(`holds every event until the reply is out (${stream ? 'streamed' : 'whole'} answers)`, async () => {
      for (let i = 0; i < 15; i++) {
        const { body, assistantId } = webRequest(browser.socket, { content: `Quick ${i}`, extra: { stream, background_tasks: {} } });
        const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
        const replySeq = stamp();
        expect(res.status, res.text).toBe(200);
        const chatId = res.body.chat_id;
        const done = await browser.next((e) => e.chat_id === chatId && e.type === 'chat:completion' && e.data?.done === true, 'the done event');
        expect(done.message_id).toBe(assistantId);
        expect(outputText(done.data.output)).toBe('Instant.');
        await browser.next((e) => e.chat_id === chatId && e.type === 'chat:active' && e.data?.active === false, 'chat:active false');
        const events = browser.received.filter((e) => e.chat_id === chatId);
        expect(events.every((e) => e.seq > replySeq)).toBe(true);
      }
      expect(world.model.requests.at(-1).stream).toBe(stream);
    });
  }
});
