import { buildParley } from './app.js';

/** Process entry: build the app, listen, and shut down cleanly on SIGINT/SIGTERM. */
async function main(): Promise<void> {
  // Whatever the server creates (database, uploads, caches) is its own; plugin workers run as another user.
  process.umask(0o077);
  const parley = await buildParley();
  const { app, core } = parley;

  // Installed before listening: a signal that comes as soon as /health answers still shuts down
  // cleanly (after the start-up in progress has finished), instead of killing the process.
  let started: Promise<unknown> = Promise.resolve();
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    await started.catch(() => undefined);
    core.log.info({ signal }, 'shutting down');
    await core.events.publish({ event: 'system.shutdown.started', source: 'system' });
    await core.events.publish({ event: 'system.shutdown.completed', source: 'system' });
    await parley.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  started = (async () => {
    await core.events.publish({ event: 'system.startup.started', source: 'system' });
    await app.listen({ host: core.env.host, port: core.env.port });
    await core.events.publish({ event: 'system.startup.completed', source: 'system' });
    core.log.info({ host: core.env.host, port: core.env.port, database: core.database.dialect }, 'parley ready');
  })();
  await started;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
