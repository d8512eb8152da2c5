import type { FastifyReply, FastifyRequest } from 'fastify';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { callContext, sendAnswer } from '../../core/upstream/relay.js';
import type { Json } from '../chats/history.js';
import { ChatIdParams, ChatTaskIds, StopResponse, TaskBody, TaskConfigForm, TaskConfigResponse, TaskIdParams, TaskList } from './schemas.js';
import type { GroupsService } from '../groups/service.js';
import type { TaskKind, TasksService } from './service.js';

/** `/api/tasks*` (main.py): the running generations, listed and stopped. */
async function runningTasksRoutes(app: App, ctx: AreaContext<{ tasks: TasksService }>): Promise<void> {
  const { tasks } = ctx.services;
  const { auth } = ctx;
  const schemaTags = ['tasks'];

  app.get('/api/tasks', { onRequest: auth.admin, schema: { tags: schemaTags, response: { 200: TaskList } } }, async () => ({ tasks: await tasks.registry.list() }));

  app.post('/api/tasks/stop/:task_id', { onRequest: auth.admin, schema: { tags: schemaTags, params: TaskIdParams, response: { 200: StopResponse } } }, (request) =>
    tasks.registry.stop(request.params.task_id),
  );

  app.get('/api/tasks/chat/:chat_id', { onRequest: auth.verified, schema: { tags: schemaTags, params: ChatIdParams, response: { 200: ChatTaskIds } } }, (request) =>
    tasks.ofChat(request.user!, request.params.chat_id),
  );

  app.post('/api/tasks/chat/:chat_id/stop', { onRequest: auth.verified, schema: { tags: schemaTags, params: ChatIdParams, response: { 200: StopResponse } } }, (request) =>
    tasks.stopChat(request.user!, request.params.chat_id),
  );
}

/** `/api/v1/tasks` (routers/tasks.py): background task completions and their config. `POST /active/chats` is gone in 0.11.0. */
async function tasksRoutes(app: App, ctx: AreaContext<{ tasks: TasksService; groups: GroupsService }>): Promise<void> {
  const { tasks, groups } = ctx.services;
  const { auth } = ctx;
  const schemaTags = ['tasks'];
  const contextOf = (request: FastifyRequest, reply: FastifyReply) => callContext(request, reply, { groupNames: () => groups.groupsOf(request.user!.id) });

  app.get('/config', { onRequest: auth.verified, schema: { tags: schemaTags, response: { 200: TaskConfigResponse } } }, () => tasks.config());

  app.post('/config/update', { onRequest: auth.admin, schema: { tags: schemaTags, body: TaskConfigForm, response: { 200: TaskConfigResponse } } }, (request) =>
    tasks.updateConfig(request.body),
  );

  const routes: [string, TaskKind][] = [
    ['/title/completions', 'title'],
    ['/follow_up/completions', 'follow_up'],
    ['/tags/completions', 'tags'],
    ['/image_prompt/completions', 'image_prompt'],
    ['/queries/completions', 'queries'],
    ['/auto/completions', 'auto'],
    ['/emoji/completions', 'emoji'],
    ['/moa/completions', 'moa'],
  ];
  for (const [url, kind] of routes) {
    app.post(url, { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags: schemaTags, body: TaskBody } }, async (request, reply) => {
      const answer = await tasks.run(kind, request.user!, request.body as Json, contextOf(request, reply));
      return sendAnswer(reply, answer, answer.kind === 'stream' ? 'text/event-stream' : undefined);
    });
  }
}

export const runningTasksArea = defineArea(null, runningTasksRoutes);
export const tasksArea = defineArea('/api/v1/tasks', tasksRoutes);
