import { describe, expect, it } from 'vitest';
import { useServer } from '../../helpers/world.js';
import { toolBody, TOOLS_ENV } from './helpers.js';

const world = useServer({ env: TOOLS_ENV, admin: 'Module Admin' });

const importing = (module: string) => `"""
title: Imports ${module}
"""
import ${module}


class Tools:
    def ping(self) -> str:
        """Answers pong."""
        return "pong"
`;

/** Issue 15, item 6: a tool whose import fails says which module is missing and how packages are added. */
describe('a tool importing a module the plugin environment lacks', () => {
  it('is refused with 400 naming the module, the frontmatter requirements line and the switches that turn it off', async () => {
    const res = await world.api.post('/api/v1/tools/create', toolBody('needs_missing', { content: importing('not_a_real_module_xyz.sub') }), {
      token: world.admin.token,
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain("No module named 'not_a_real_module_xyz'");
    expect(res.body.detail).toContain('"requirements: not_a_real_module_xyz"');
    expect(res.body.detail).toContain('OFFLINE_MODE');
    expect(res.body.detail).toContain('ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS');
    expect((await world.api.get('/api/v1/tools/id/needs_missing', { token: world.admin.token })).status).toBe(404);
  });

  it.each(['aiofiles', 'openai', 'googleapiclient.discovery', 'google_auth_oauthlib.flow', 'numpy', 'scipy', 'sympy', 'git', 'dotenv'])(
    'loads a tool importing %s, part of the standard tool environment',
    async (module) => {
      const id = `imports_${module.replace(/\W/g, '_')}`;
      const res = await world.api.post('/api/v1/tools/create', toolBody(id, { content: importing(module) }), { token: world.admin.token });
      expect(res.status, res.text).toBe(200);
    },
  );
});
