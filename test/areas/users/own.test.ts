import { describe, expect, it } from 'vitest';
import { as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { expectNoVariables, USER_MODEL_KEYS } from './fixtures.js';

const ACTION_PROHIBITED = 'The requested action has been restricted as a security measure.';
const ACCESS_PROHIBITED = 'You do not have permission to access this resource. Please contact your administrator for assistance.';

describe("the signed-in user's own settings, status, info, variables, usage and permissions", () => {
  const world = useServer({ admin: 'Owner Olga', users: { member: ['user', 'Member Mia'], pending: ['pending', 'Pending Paz'] }, freshEvents: true });

  describe('settings', () => {
    it('answers null before anything is saved', async () => {
      const res = await world.api.get('/api/v1/users/user/settings', as(world.member));
      expect(res.status).toBe(200);
      expect(res.body).toBeNull();
    });

    it('saves {ui:{...}} and other top-level keys, merging at the top level and ui field by field', async () => {
      const first = await world.api.post('/api/v1/users/user/settings/update', { ui: { models: ['m1'], version: '0.11.0' }, extra: 1 }, as(world.member));
      expect(first.status, first.text).toBe(200);
      expect(first.body).toEqual({ ui: { models: ['m1'], version: '0.11.0' }, extra: 1 });
      expect(world.events.map((e) => e.event)).toEqual(['user.settings_updated']);
      expect(world.events[0]).toMatchObject({ actor: { id: world.member.id }, subject: { type: 'user', id: world.member.id } });

      const second = await world.api.post('/api/v1/users/user/settings/update', { ui: { pinnedModels: ['m2'] } }, as(world.member));
      const both = { ui: { models: ['m1'], version: '0.11.0', pinnedModels: ['m2'] }, extra: 1 };
      expect(second.body).toEqual(both);
      expect((await world.api.get('/api/v1/users/user/settings', as(world.member))).body).toEqual(both);
    });

    it('keeps the interface settings when a save leaves ui out (the shortcuts page saves keybindings alone)', async () => {
      const res = await world.api.post('/api/v1/users/user/settings/update', { keybindings: {} }, as(world.member));
      expect(res.body).toEqual({ ui: { models: ['m1'], version: '0.11.0', pinnedModels: ['m2'] }, extra: 1, keybindings: {} });
    });

    it('drops tool servers and webhook notifications for users without those features; admins keep them', async () => {
      const body = { ui: { toolServers: [{ url: 'http://t' }], notifications: { webhook_url: 'http://hook', sound: true } }, notifications: { x: 1 } };
      const user = await world.api.post('/api/v1/users/user/settings/update', body, as(world.member));
      expect(user.body.ui.notifications).toEqual({ sound: true });
      expect(user.body.ui).not.toHaveProperty('toolServers');
      expect(user.body).not.toHaveProperty('notifications');
      const own = await world.api.post('/api/v1/users/user/settings/update', body, as(world.admin));
      expect(own.body).toMatchObject(body);
    });

    it('refuses users whose permissions exclude settings.interface with 403, and 422 for a non-object ui', async () => {
      const defaults = (await world.api.get('/api/v1/users/default/permissions', as(world.admin))).body;
      const off = { ...defaults, settings: { interface: false } };
      expect((await world.api.post('/api/v1/users/default/permissions', off, as(world.admin))).status).toBe(200);
      const refused = await world.api.post('/api/v1/users/user/settings/update', { ui: { a: 1 } }, as(world.member));
      expect(refused.status).toBe(403);
      expect(refused.body.detail).toBe(ACCESS_PROHIBITED);
      expect((await world.api.post('/api/v1/users/user/settings/update', { ui: { a: 1 } }, as(world.admin))).status).toBe(200);
      expect((await world.api.post('/api/v1/users/default/permissions', defaults, as(world.admin))).status).toBe(200);

      const bad = await world.api.post('/api/v1/users/user/settings/update', { ui: 'dark' }, as(world.member));
      expect(bad.status).toBe(422);
      expect(bad.body.detail[0]).toMatchObject({ type: 'dict_type', loc: ['body', 'ui'] });
    });

    it('answers 401 to pending users', async () => {
      expect((await world.api.get('/api/v1/users/user/settings', as(world.pending))).status).toBe(401);
      expect((await world.api.post('/api/v1/users/user/settings/update', { ui: {} }, as(world.pending))).status).toBe(401);
    });
  });

  describe('status', () => {
    it('answers the record and updates the fields given', async () => {
      const get = await world.api.get('/api/v1/users/user/status', as(world.member));
      expect(get.status, get.text).toBe(200);
      expect(Object.keys(get.body).sort()).toEqual(USER_MODEL_KEYS);
      expect(get.body).toMatchObject({ id: world.member.id, status_emoji: null, status_message: null });

      const set = await world.api.post('/api/v1/users/user/status/update', { status_emoji: '🌴', status_message: 'Away', status_expires_at: 2000000000 }, as(world.member));
      expect(set.status, set.text).toBe(200);
      expect(set.body).toMatchObject({ status_emoji: '🌴', status_message: 'Away', status_expires_at: 2000000000 });
      expect(world.events.map((e) => e.event)).toEqual(['user.status_updated']);

      const partial = await world.api.post('/api/v1/users/user/status/update', { status_message: 'Back soon', status_emoji: null }, as(world.member));
      expect(partial.body).toMatchObject({ status_emoji: '🌴', status_message: 'Back soon', status_expires_at: 2000000000 });
      const card = await world.api.get(`/api/v1/users/${world.member.id}/info`, as(world.admin));
      expect(card.body).toMatchObject({ status_emoji: '🌴', status_message: 'Back soon' });
    });

    it('validates the form with 422', async () => {
      const res = await world.api.post('/api/v1/users/user/status/update', { status_expires_at: 'soon' }, as(world.member));
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ type: 'int_type', loc: ['body', 'status_expires_at'] });
    });

    it('answers 403 while user status is turned off', async () => {
      const now = world.server.parley.core.clock.now();
      await world.server.parley.core.settings.set({ 'users.enable_status': false }, now);
      try {
        for (const res of [
          await world.api.get('/api/v1/users/user/status', as(world.member)),
          await world.api.post('/api/v1/users/user/status/update', { status_message: 'x' }, as(world.member)),
        ]) {
          expect(res.status).toBe(403);
          expect(res.body.detail).toBe(ACTION_PROHIBITED);
        }
        expect((await world.record(world.member)).status_message).toBe('Back soon');
      } finally {
        await world.server.parley.core.settings.set({ 'users.enable_status': true }, now);
      }
    });
  });

  describe('info', () => {
    it('answers null, then merges what is posted into it', async () => {
      expect((await world.api.get('/api/v1/users/user/info', as(world.member))).body).toBeNull();
      const first = await world.api.post('/api/v1/users/user/info/update', { location: 'Lisbon', team: 'A' }, as(world.member));
      expect(first.status, first.text).toBe(200);
      expect(first.body).toEqual({ location: 'Lisbon', team: 'A' });
      const second = await world.api.post('/api/v1/users/user/info/update', { team: 'B' }, as(world.member));
      expect(second.body).toEqual({ location: 'Lisbon', team: 'B' });
      expect((await world.api.get('/api/v1/users/user/info', as(world.member))).body).toEqual({ location: 'Lisbon', team: 'B' });
      expect(world.events).toEqual([]);
    });

    it('refuses a body that is not an object with 422', async () => {
      const res = await world.api.post('/api/v1/users/user/info/update', ['x'], as(world.member));
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ type: 'dict_type', loc: ['body'] });
      expect((await world.api.post('/api/v1/users/user/info/update', undefined, as(world.member))).status).toBe(422);
      expect((await world.api.get('/api/v1/users/user/info', as(world.pending))).status).toBe(401);
    });
  });

  describe('variables', () => {
    it('answers {} at first, then the saved strings (CRLF made LF)', async () => {
      expect((await world.api.get('/api/v1/users/user/variables', as(world.member))).body).toEqual({ variables: {} });
      const res = await world.api.post('/api/v1/users/user/variables/update', { variables: { city: 'Porto', signature: 'a\r\nb' } }, as(world.member));
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ variables: { city: 'Porto', signature: 'a\nb' } });
      expect((await world.api.get('/api/v1/users/user/variables', as(world.member))).body).toEqual({ variables: { city: 'Porto', signature: 'a\nb' } });
    });

    it('replaces the whole set; an empty form clears it', async () => {
      await world.api.post('/api/v1/users/user/variables/update', { variables: { only: 'one' } }, as(world.admin));
      expect((await world.api.get('/api/v1/users/user/variables', as(world.admin))).body).toEqual({ variables: { only: 'one' } });
      const cleared = await world.api.post('/api/v1/users/user/variables/update', {}, as(world.admin));
      expect(cleared.body).toEqual({ variables: {} });
      expect((await world.api.get('/api/v1/users/user/variables', as(world.admin))).body).toEqual({ variables: {} });
    });

    it('refuses bad keys, non-string values, long values and large sets with 400, keeping what was stored', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ City: 'x' }, 'Invalid user variable key: City'],
        [{ '1st': 'x' }, 'Invalid user variable key: 1st'],
        [{ count: 3 }, 'User variable must be a string: count'],
        [{ long: 'x'.repeat(20_001) }, 'User variable is too long: long'],
        [Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`v${i}`, 'x'.repeat(19_000)])), 'User variables are too large.'],
      ];
      for (const [variables, detail] of cases) {
        const res = await world.api.post('/api/v1/users/user/variables/update', { variables }, as(world.member));
        expect(res.status, detail).toBe(400);
        expect(res.body.detail).toBe(detail);
      }
      expect((await world.api.get('/api/v1/users/user/variables', as(world.member))).body).toEqual({ variables: { city: 'Porto', signature: 'a\nb' } });
      const notObject = await world.api.post('/api/v1/users/user/variables/update', { variables: ['x'] }, as(world.member));
      expect(notObject.status).toBe(422);
    });

    it('never appear in any other user response', async () => {
      const responses = [
        await world.api.get('/api/v1/users/', as(world.admin)),
        await world.api.get('/api/v1/users/all', as(world.admin)),
        await world.api.get('/api/v1/users/search', as(world.member)),
        await world.api.get(`/api/v1/users/${world.member.id}`, as(world.admin)),
        await world.api.get(`/api/v1/users/${world.member.id}/info`, as(world.admin)),
        await world.api.get('/api/v1/users/user/status', as(world.member)),
        await world.api.post('/api/v1/users/user/status/update', {}, as(world.member)),
        await world.api.post(`/api/v1/users/${world.member.id}/update`, { name: 'Member Mia' }, as(world.admin)),
        await world.api.get('/api/v1/auths/', as(world.member)),
      ];
      for (const res of responses) {
        expect(res.status, res.text).toBe(200);
        expectNoVariables(res.body);
        expect(res.text).not.toContain('Porto');
      }
    });

    it('answers 401 to pending users', async () => {
      expect((await world.api.get('/api/v1/users/user/variables', as(world.pending))).status).toBe(401);
      expect((await world.api.post('/api/v1/users/user/variables/update', { variables: {} }, as(world.pending))).status).toBe(401);
    });
  });

  describe('usage', () => {
    const dayOf = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);

    it('answers the whole report shape for the account lifetime by default', async () => {
      const res = await world.api.get('/api/v1/users/usage', as(world.member));
      expect(res.status, res.text).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(
        ['totals', 'heatmap', 'weekly_heatmap', 'cumulative_heatmap', 'insights', 'top_models', 'top_tools', 'period', 'limits'].sort(),
      );
      const created = (await world.record(world.member)).created_at;
      expect(res.body.period.start_date).toBe(created);
      expect(res.body.period.days).toBe(1);
      expect(res.body.heatmap.map((d: { date: string }) => d.date)).toContain(dayOf(created));
      expect(res.body.totals).toEqual({
        lifetime_tokens: 0,
        input_tokens: 0,
        output_tokens: 0,
        estimated_tokens: 0,
        peak_daily_tokens: 0,
        longest_chat_seconds: 0,
        current_streak: 0,
        longest_streak: 0,
        total_chats: 0,
        active_days: 0,
        models_used: 0,
        messages: 0,
        user_messages: 0,
        assistant_messages: 0,
      });
      expect(res.body.insights).toEqual({
        most_used_model: null,
        average_tokens_per_chat: 0,
        average_messages_per_active_day: 0,
        user_message_share: 0,
        assistant_message_share: 0,
      });
      expect(res.body.top_models).toEqual([]);
      expect(res.body.top_tools).toEqual([]);
    });

    it('covers `days` calendar days, summed by weeks starting on Monday and cumulated', async () => {
      const end = Date.UTC(2025, 5, 18, 12) / 1000; // a Wednesday
      const res = await world.api.get(`/api/v1/users/usage?days=14&end_date=${end}`, as(world.member));
      expect(res.status, res.text).toBe(200);
      expect(res.body.period).toEqual({ start_date: end - 13 * 86400, end_date: end, days: 14 });
      expect(res.body.heatmap).toHaveLength(14);
      expect(res.body.heatmap[0]).toEqual({ date: '2025-06-05', messages: 0, chats: 0, tokens: 0, models: {} });
      expect(res.body.heatmap[13].date).toBe('2025-06-18');
      expect(res.body.weekly_heatmap.map((d: { date: string }) => d.date)).toEqual(['2025-06-02', '2025-06-09', '2025-06-16']);
      expect(res.body.cumulative_heatmap.map((d: { date: string }) => d.date)).toEqual(res.body.heatmap.map((d: { date: string }) => d.date));
    });

    it("dates days in the user's time zone", async () => {
      const lateEvening = Date.UTC(2025, 2, 10, 23, 0) / 1000;
      await world.server.parley.services.users.update(world.member.id, { timezone: 'Asia/Tokyo' });
      try {
        const res = await world.api.get(`/api/v1/users/usage?start_date=${lateEvening}&end_date=${lateEvening}`, as(world.member));
        expect(res.body.heatmap.map((d: { date: string }) => d.date)).toEqual(['2025-03-11']);
        expect(res.body.period.days).toBe(1);
      } finally {
        await world.server.parley.services.users.update(world.member.id, { timezone: null });
      }
    });

    it('validates the period: days within 7..732 (422), start before end (400)', async () => {
      for (const days of [6, 733]) {
        const res = await world.api.get(`/api/v1/users/usage?days=${days}`, as(world.member));
        expect(res.status).toBe(422);
        expect(res.body.detail[0].loc).toEqual(['query', 'days']);
      }
      const reversed = await world.api.get('/api/v1/users/usage?start_date=1700000000&end_date=1600000000', as(world.member));
      expect(reversed.status).toBe(400);
      expect(reversed.body.detail).toBe('start_date must be before end_date');
      expect((await world.api.get('/api/v1/users/usage', as(world.pending))).status).toBe(401);
    });
  });

  describe('permissions', () => {
    it("answers the caller's merged permissions", async () => {
      const res = await world.api.get('/api/v1/users/permissions', as(world.member));
      expect(res.status, res.text).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['access_grants', 'chat', 'features', 'settings', 'sharing', 'workspace']);
      expect(res.body.chat.import).toBe(true);
      expect(res.body.features.api_keys).toBe(false);
      expect((await world.api.get('/api/v1/users/permissions', as(world.pending))).status).toBe(401);
    });

    it('answers, replaces and resets the default permissions (admin)', async () => {
      const defaults = await world.api.get('/api/v1/users/default/permissions', as(world.admin));
      expect(defaults.status, defaults.text).toBe(200);
      expect(defaults.body.workspace.models).toBe(false);
      expect(defaults.body.sharing.public_tools).toBe(false);

      const baseline = await world.api.get('/api/v1/users/default/permissions/defaults', as(world.admin));
      expect(baseline.status).toBe(200);
      expect(baseline.body).toEqual(defaults.body);

      // Switches left out take the form's defaults; the section objects themselves are required.
      const form = { workspace: { models: true }, sharing: {}, access_grants: {}, chat: {}, features: {}, settings: {} };
      const saved = await world.api.post('/api/v1/users/default/permissions', form, as(world.admin));
      expect(saved.status, saved.text).toBe(200);
      expect(saved.body.workspace.models).toBe(true);
      // A save that leaves public tool sharing out does not grant it (reference #27716).
      expect(saved.body.sharing.public_tools).toBe(false);
      expect(saved.body.chat.import).toBe(true);
      expect(world.events.map((e) => e.event)).toEqual(['user.permissions_updated']);
      expect(world.events[0]).toMatchObject({ subject: { type: 'config', id: 'user.permissions' }, actor: { id: world.admin.id } });
      expect((await world.api.get('/api/v1/users/default/permissions', as(world.admin))).body).toEqual(saved.body);
      expect((await world.api.get('/api/v1/users/permissions', as(world.member))).body.workspace.models).toBe(true);
      expect((await world.api.get('/api/v1/users/default/permissions/defaults', as(world.admin))).body).toEqual(baseline.body);

      const missing = await world.api.post('/api/v1/users/default/permissions', { workspace: {} }, as(world.admin));
      expect(missing.status).toBe(422);
      expect(missing.body.detail.map((d: { loc: string[] }) => d.loc[1]).sort()).toEqual(['access_grants', 'chat', 'features', 'settings', 'sharing']);

      expect((await world.api.post('/api/v1/users/default/permissions', defaults.body, as(world.admin))).status).toBe(200);
    });

    it('answers 401 to non-admins on the default permissions', async () => {
      for (const path of ['/api/v1/users/default/permissions', '/api/v1/users/default/permissions/defaults']) {
        expect((await world.api.get(path, as(world.member))).status).toBe(401);
      }
      expect((await world.api.post('/api/v1/users/default/permissions', {}, as(world.member))).status).toBe(401);
    });
  });
});
