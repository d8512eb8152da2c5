import Fastify from 'fastify';
const app = Fastify();
app.get('/health', async () => ({ status: true }));
const body = { version: '0.11.0', deployment_id: '' };
app.get('/api/version', async (_r, reply) => reply.code(200).send(body));
await app.listen({ host: process.env.HOST, port: Number(process.env.PORT) });
process.on('SIGINT', () => app.close().then(() => process.exit(0)));
