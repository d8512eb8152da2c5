import { describe, expect, it } from 'vitest';
import { testHost } from './helpers.js';

/**
 * Issue 8's numbers: a worker of the standard environment starts in ≤ 1 s, and
 * importing the whole `open_webui` compatibility package adds ≤ 50 ms to a
 * cold tool load. Each is measured on fresh workers, best of three, and the
 * import by the CPU time it costs (wall time is printed too): the machines
 * these run on are shared, and a loaded one stretches wall time many times over.
 */
const IMPORTS_EVERYTHING = `
import time

_started, _cpu = time.perf_counter(), time.process_time()
from open_webui.config import UPLOAD_DIR
from open_webui.models.chats import Chats
from open_webui.models.config import Config
from open_webui.models.files import FileForm, Files
from open_webui.models.users import UserModel, Users
from open_webui.routers.files import upload_file_handler
from open_webui.routers.images import get_image_data, upload_image
from open_webui.storage.provider import Storage
from open_webui.utils.chat import generate_chat_completion
from open_webui.utils.oauth import OAuthManager
IMPORT_MS = [(time.perf_counter() - _started) * 1000, (time.process_time() - _cpu) * 1000]


class Tools:
    def import_ms(self) -> list:
        """How long the imports took: wall and CPU milliseconds."""
        return IMPORT_MS
`;

describe('compatibility timing', () => {
  it('starts a worker of the standard environment within 1 s and imports the package within 50 ms', async () => {
    const starts: number[] = [];
    const imports: [number, number][] = [];
    for (let run = 0; run < 3; run++) {
      const { host, dispose } = testHost({ poolSize: 1 });
      try {
        const started = performance.now();
        await host.probe();
        starts.push(performance.now() - started);
        imports.push((await host.callTool({ id: `imports_${run}`, content: IMPORTS_EVERYTHING }, 'import_ms', {})).value as [number, number]);
      } finally {
        await dispose();
      }
    }
    const runs = imports.map(([wall, cpu]) => `${wall.toFixed(1)} (cpu ${cpu.toFixed(1)})`).join(', ');
    console.log(`worker start: ${starts.map((t) => t.toFixed(0)).join(', ')} ms; open_webui import in a cold worker: ${runs} ms`);
    expect(Math.min(...starts)).toBeLessThan(1000);
    expect(Math.min(...imports.map(([, cpu]) => cpu))).toBeLessThan(50);
  }, 60_000);
});
