import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginError } from '../../../src/core/python/errors.js';
import { type PythonHost, rewriteImports } from '../../../src/core/python/host.js';
import { TOOLS_DIR, expectedExtraction, testHost, toolSource } from './helpers.js';

// The specs tools.md §4.6 states for its three worked examples, verbatim.
const EXAMPLE_1 = `[{"name":"get_time","description":"Return the current server time.","parameters":{"properties":{},"type":"object"}},
 {"name":"get_weather","description":"Get the weather forecast for a city.","parameters":{"properties":{"city":{"description":"Name of the city","type":"string"},"days":{"default":1,"description":"Number of days to forecast","type":"integer"}},"required":["city"],"type":"object"}}]`;
const EXAMPLE_2 = `[{"name":"no_doc","description":"","parameters":{"properties":{"x":{"type":"integer"},"y":{"type":"number"},"z":{"anyOf":[{"type":"string"},{"type":"integer"}],"default":"a"}},"required":["x","y"],"type":"object"}},
 {"name":"search","description":"Search the index.\\n\\nMulti-line description continues here.","parameters":{"properties":{"query":{"description":"The search query","type":"string"},"limit":{"description":"Max results","type":"integer"},"mode":{"default":"fast","description":"Search mode","enum":["fast","exact"],"type":"string"},"tags":{"default":[],"items":{"type":"string"},"type":"array"},"weights":{"items":{"type":"number"},"type":"array"},"options":{"additionalProperties":true,"default":{},"type":"object"},"strict":{"default":false,"type":"boolean"},"color":{"enum":["red","blue"],"type":"string","default":"red"},"anything":{"type":"string"}},"required":["query"],"type":"object"}}]`;
const EXAMPLE_3 = `[{"name":"add_note","description":"Add a note.\\n\\nArgs:\\ntitle: ignored google style","parameters":{"properties":{"title":{"description":"Note title","type":"string"},"item":{"properties":{"title":{"type":"string"},"qty":{"default":1,"type":"integer"}},"required":["title"],"type":"object","description":"The item"}},"required":["title","item"],"type":"object"}},
 {"name":"ping","description":"Ping.","parameters":{"properties":{},"type":"object"}}]`;

/** Byte for byte, key order included (JSON.stringify keeps the order Python produced). */
const same = (actual: unknown, stated: string) => expect(JSON.stringify(actual)).toBe(JSON.stringify(JSON.parse(stated)));

describe('extraction (tools.md §3.1, §4)', () => {
  let host: PythonHost;
  let dispose: () => Promise<void>;
  beforeAll(() => ({ host, dispose } = testHost()));
  afterAll(async () => dispose());

  it('example 1: weather tool with frontmatter, valves and user valves', async () => {
    const extraction = await host.extract('weather', toolSource('example1_weather'));
    same(extraction.specs, EXAMPLE_1);
    expect(JSON.stringify(extraction.manifest)).toBe(
      '{"title":"Weather Tool","author":"jane","version":"0.1.0","requirements":"requests, pytz","description":"Gets the weather"}',
    );
    expect(extraction.hasUserValves).toBe(true);
    expect(extraction.hasValves).toBe(true);
    // §5.2's example schema, titles kept.
    expect(JSON.stringify(extraction.valvesSchema)).toBe(
      '{"properties":{"api_key":{"default":"","description":"API key","title":"Api Key","type":"string"}},"title":"Valves","type":"object"}',
    );
    expect(extraction.userValvesSchema).toEqual({
      properties: { units: { default: 'metric', title: 'Units', type: 'string' } },
      title: 'UserValves',
      type: 'object',
    });
  });

  it('example 2: optional, literal, enum and reserved parameters', async () => {
    const extraction = await host.extract('search', toolSource('example2_search'));
    same(extraction.specs, EXAMPLE_2);
    expect(extraction.manifest).toEqual({});
    expect(extraction.hasUserValves).toBe(false);
    expect(extraction.valvesSchema).toBeNull();
  });

  it('example 3: nested model, google docstring, static method', async () => {
    const extraction = await host.extract('notes', toolSource('example3_notes'));
    same(extraction.specs, EXAMPLE_3);
    expect(extraction.manifest).toEqual({
      title: 'Notes',
      author: 'bob',
      funding_url: 'https://example.com/fund',
      version: '1.2',
      required_open_webui_version: '0.6.0',
    });
    expect(extraction.hasUserValves).toBe(false);
  });

  it("the web UI's boilerplate tool gives its 4 specs", async () => {
    const specs = (await host.extract('boilerplate', toolSource('boilerplate_skeleton'))).specs as unknown as Array<{
      name: string;
      parameters: { properties: Record<string, unknown>; required?: string[] };
    }>;
    expect(specs.map((spec) => spec.name)).toEqual(['calculator', 'get_current_time', 'get_current_weather', 'get_user_name_and_email_and_id']);
    expect(specs[0].parameters).toEqual({
      properties: { equation: { description: 'The mathematical equation to calculate.', type: 'string' } },
      required: ['equation'],
      type: 'object',
    });
    expect(specs[2].parameters).toEqual({
      properties: { city: { default: 'New York, NY', description: 'Get the current weather for a given city.', type: 'string' } },
      type: 'object',
    });
    expect(specs[3].parameters).toEqual({ properties: {}, type: 'object' });
    same(specs, JSON.stringify(expectedExtraction('boilerplate_skeleton').specs));
  });

  // The real boilerplate lives in the reference's frontend source, which is not part of this repository:
  // this check runs only where OPEN_WEBUI_GIT_DIR names a git directory of it with the tag v0.10.2
  // (the skeleton test above always runs).
  const mirror = process.env.OPEN_WEBUI_GIT_DIR ?? '';
  if (mirror && existsSync(mirror)) it('the real boilerplate gives the same specs as our skeleton of it', async () => {
    const svelte = execFileSync('git', ['--git-dir', mirror, 'show', 'v0.10.2:src/lib/components/workspace/Tools/ToolkitEditor.svelte'], {
      encoding: 'utf8',
    });
    const boilerplate = /let boilerplate = `([\s\S]*?)`;/.exec(svelte)![1];
    const extraction = await host.extract('real_boilerplate', boilerplate);
    same(extraction.specs, JSON.stringify(expectedExtraction('boilerplate_skeleton').specs));
  });

  // Every corpus tool against the output of the reference's own code (get_tool_specs with
  // langchain-core 1.6.5 and pydantic 2.13), stored in tools/expected/.
  const corpus = readdirSync(TOOLS_DIR)
    .filter((file) => file.endsWith('.py'))
    .map((file) => path.basename(file, '.py'));
  it.each(corpus)('%s matches the reference byte for byte', async (name) => {
    const extraction = await host.extract(name, toolSource(name));
    const reference = expectedExtraction(name);
    expect(JSON.stringify(extraction.specs)).toBe(JSON.stringify(reference.specs));
    expect(JSON.stringify(extraction.manifest)).toBe(JSON.stringify(reference.frontmatter));
    expect(extraction.hasUserValves).toBe(reference.has_user_valves);
  });

  it('has at least ten corpus tools', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(10);
  });

  describe('frontmatter follows Python semantics', () => {
    const manifest = async (content: string) => (await host.extract('fm', `${content}\nclass Tools:\n    pass\n`)).manifest;

    it('needs """ alone on the first line', async () => {
      expect(await manifest('\n"""\ntitle: x\n"""')).toEqual({});
      expect(await manifest('"""title: x\nauthor: y\n"""')).toEqual({});
      expect(await manifest("'''\ntitle: x\n'''")).toEqual({});
      expect(await manifest('"""  \ntitle: x\n"""')).toEqual({ title: 'x' });
    });

    it('keeps string values, ignores keys with digits or hyphens, lets later keys win', async () => {
      expect(await manifest('"""\nTitle:  Spaced  \nkey-2: no\nk2: no\nversion: 1.0\nversion: 2.0\nnot a pair\n"""')).toEqual({
        Title: 'Spaced',
        version: '2.0',
      });
    });

    it('stops at the first line containing """ and splits lines as splitlines does', async () => {
      expect(await manifest('"""\ntitle: a\rauthor: b\u2028version: c\ndescription: d """\nlicense: e')).toEqual({
        title: 'a',
        author: 'b',
        version: 'c',
      });
    });
  });

  describe('sources that do not load fail with the Python error', () => {
    const failure = async (file: string) => {
      try {
        await host.extract(`broken_${path.basename(file, '.py')}`, toolSource(`broken/${file}`));
      } catch (error) {
        return error as PluginError;
      }
      throw new Error('expected the extraction to fail');
    };

    it('syntax error', async () => {
      const error = await failure('syntax_error.py');
      expect(error.code).toBe('python_error');
      expect(error.message).toBe("SyntaxError: '(' was never closed (tool_broken_syntax_error.py, line 2)");
      expect(error.details.pythonType).toBe('SyntaxError');
    });

    it('import error', async () => {
      const error = await failure('import_error.py');
      expect(error.message).toMatch(/^ModuleNotFoundError: No module named 'module_that_does_not_exist_anywhere': it is not installed/);
      expect(error.message).toContain('"requirements: module_that_does_not_exist_anywhere"');
      expect(error.details.missingModule).toBe('module_that_does_not_exist_anywhere');
    });

    it('no Tools class', async () => {
      expect((await failure('no_tools_class.py')).message).toBe('No Tools class found in the module');
    });

    it('Tools() raising', async () => {
      expect((await failure('init_error.py')).message).toBe('RuntimeError: cannot start');
    });

    it('annotations that postponed evaluation cannot resolve (the reference fails the same way)', async () => {
      expect((await failure('nested_annotation.py')).message).toBe("NameError: name 'Inner' is not defined");
    });

    it('a failed load leaves the tool usable at its previous content', async () => {
      await host.extract('recovering', toolSource('example3_notes'));
      await expect(host.extract('recovering', 'class Tools(:\n')).rejects.toMatchObject({ code: 'python_error' });
      const result = await host.callTool({ id: 'recovering', content: toolSource('example3_notes') }, 'ping', {});
      expect(result.value).toBe('pong');
    });
  });

  it('rewrites imports as the reference does before storing', () => {
    expect(rewriteImports('from utils.misc import x\nfrom config import y\nfrom mainframe import z\nimport utils')).toBe(
      'from open_webui.utils.misc import x\nfrom open_webui.config import y\nfrom open_webui.mainframe import z\nimport utils',
    );
  });
});

describe('valves (tools.md §5)', () => {
  let host: PythonHost;
  let dispose: () => Promise<void>;
  const notes = { id: 'notes', content: toolSource('example3_notes') };
  const options = { id: 'options', content: toolSource('valves_options') };
  beforeAll(() => ({ host, dispose } = testHost()));
  afterAll(async () => dispose());

  it('stores only the keys sent, coerced, nulls and unknown keys dropped (§5.3 table)', async () => {
    expect(await host.validateValves(notes, 'valves', {})).toEqual({});
    expect(await host.validateValves(notes, 'valves', { priority: '5' })).toEqual({ priority: 5 });
    expect(await host.validateValves(notes, 'valves', { priority: null, max_turns: 3, bogus: 1 })).toEqual({ max_turns: 3 });
  });

  it('rejects values the class does not accept', async () => {
    await expect(host.validateValves(notes, 'valves', { priority: 'high' })).rejects.toMatchObject({ code: 'invalid_valves' });
  });

  it('reports a missing class', async () => {
    await expect(host.validateValves(notes, 'user', { x: 1 })).rejects.toMatchObject({ code: 'no_valves' });
    expect(await host.valvesSpec(notes, 'user')).toBeNull();
  });

  it('resolves select options: lists as given, method names called with the user', async () => {
    const spec = (await host.valvesSpec(options, 'valves', { id: 'u1', name: 'Ada' })) as {
      properties: Record<string, Record<string, unknown>>;
    };
    expect(spec.properties.api_key).toEqual({
      default: '',
      description: 'API key',
      input: { type: 'password' },
      title: 'Api Key',
      type: 'string',
    });
    expect(spec.properties.level.input).toEqual({ type: 'select', options: ['low', 'medium', 'high'] });
    expect(spec.properties.model.input).toEqual({ options: [{ value: 'm1', label: 'Model for Ada' }] });
    // An options name that is not a method leaves the property untouched.
    expect(spec.properties.broken.input).toEqual({ options: 'not_a_method' });
    const user = (await host.valvesSpec(options, 'user', { name: 'Ada' })) as { properties: Record<string, Record<string, unknown>> };
    expect(user.properties.theme.input).toEqual({ options: ['light', 'dark'] });
    const anonymous = (await host.valvesSpec(options, 'user')) as { properties: Record<string, Record<string, unknown>> };
    expect(anonymous.properties.theme.input).toEqual({ options: ['light'] });
  });
});
