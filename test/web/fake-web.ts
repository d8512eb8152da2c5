import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { makePdf } from '../helpers/documents.js';
import { readJson, sendJson } from '../helpers/fake-upstreams.js';
import { listenLocally } from '../helpers/server.js';
import type { Fakes } from '../helpers/world.js';

/**
 * The outside web for the web search tests, on one local port: every search
 * provider answering in its documented format (each result pointing at a page
 * here, plus one at blocked.example for the domain filter), web pages (HTML,
 * text, PDF, redirects, large, slow, missing) and YouTube's watch page, player
 * API and timed text. Requests are recorded.
 */
export interface SeenRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface FakeWeb {
  url: string;
  requests: SeenRequest[];
  /** Requests to one path. */
  seen(path: string): SeenRequest[];
  /** The most pages being answered at once since the last reset. */
  pagesAtOnce: { now: number; max: number };
  close(): Promise<void>;
}

export const BLOCKED = 'https://blocked.example/elsewhere';

/** An article page with navigation around it, so main-text extraction shows. */
export function articleHtml(name: string): string {
  const paragraph = `The ${name} article explains tidal locking in plain words. `.repeat(8);
  return `<!doctype html><html lang="en"><head><title>${name} title</title><meta name="description" content="About ${name}"></head>
<body><nav><a href="/">Home</a> | <a href="/menu">Menu of many links</a></nav>
<article><h1>${name} heading</h1><p>${paragraph}</p><p>${paragraph}</p></article>
<footer>Footer boilerplate copyright</footer><script>var tracking = "script text";</script></body></html>`;
}

const TIMED_TEXT: Record<string, string> = {
  en: '<?xml version="1.0" encoding="utf-8" ?><transcript><text start="0" dur="1.5">Hello &amp;amp; welcome</text><text start="1.5" dur="2">to the <font color="#fff">show</font></text></transcript>',
  'en-asr': '<transcript><text start="0" dur="1">generated english words</text></transcript>',
  de: '<transcript><text start="0" dur="1">Hallo und willkommen</text></transcript>',
};

export async function startFakeWeb(): Promise<FakeWeb> {
  const requests: SeenRequest[] = [];
  const pagesAtOnce = { now: 0, max: 0 };
  let base = '';
  const page = (engine: string, n: number) => `${base}/pages/${engine}-${n}`;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = await readJson(req);
    const seen: SeenRequest = { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body };
    requests.push(seen);
    const q = url.searchParams;
    const query: string = q.get('q') ?? q.get('query') ?? body?.query ?? body?.q ?? (typeof body === 'string' ? new URLSearchParams(body).get('q') : '') ?? '';
    switch (url.pathname) {
      case '/searxng/search':
        return sendJson(res, 200, {
          query,
          results: [
            { url: page('searxng', 2), title: 'Second', content: 'lower score', score: 0.5 },
            { url: page('searxng', 1), title: 'First', content: 'higher score', score: 2 },
            { url: BLOCKED, title: 'Blocked', content: 'elsewhere', score: 1 },
          ],
        });
      case '/brave':
        if (query === 'ratelimited' && requests.filter((r) => r.path === '/brave').length === 1) return sendJson(res, 429, { error: 'slow down' });
        if (req.headers['x-subscription-token'] !== 'brave-key') return sendJson(res, 401, { error: 'bad key' });
        return sendJson(res, 200, { web: { results: [{ url: page('brave', 1), title: 'Brave one', description: `brave says ${query}` }, { url: BLOCKED, title: 'Blocked', description: 'x' }] } });
      case '/tavily':
        return sendJson(res, 200, { results: [{ url: page('tavily', 1), title: 'Tavily one', content: `tavily on ${query}` }, { url: BLOCKED, title: 'Blocked', content: 'x' }] });
      case '/google': {
        const start = Number(q.get('start'));
        const num = Number(q.get('num'));
        const items = Array.from({ length: num }, (_, i) => ({ link: page('google', start + i), title: `Google ${start + i}`, snippet: `result ${start + i}` }));
        return sendJson(res, 200, { items: start > 11 ? [] : items });
      }
      case '/bing':
        return sendJson(res, 200, { webPages: { value: [{ url: page('bing', 1), name: 'Bing one', snippet: `bing ${query}` }, { url: BLOCKED, name: 'Blocked', snippet: 'x' }] } });
      case '/kagi':
        return sendJson(res, 200, { data: { search: [{ url: page('kagi', 1), title: 'Kagi one', snippet: 'kagi snippet' }, { url: BLOCKED, title: 'Blocked', snippet: 'x' }] } });
      case '/exa':
        return sendJson(res, 200, { results: [{ url: page('exa', 1), title: 'Exa one', text: 'exa text' }] });
      case '/serper':
        return sendJson(res, 200, {
          organic: [
            { link: page('serper', 2), title: 'Serper two', snippet: 'second', position: 2 },
            { link: page('serper', 1), title: 'Serper one', snippet: 'first', position: 1 },
          ],
        });
      case '/serpapi':
        return sendJson(res, 200, {
          organic_results: [
            { link: page('serpapi', 2), title: 'SerpApi two', snippet: 'second', position: 2 },
            { link: page('serpapi', 1), title: 'SerpApi one', snippet: 'first', position: 1 },
          ],
        });
      case '/jina':
        return sendJson(res, 200, { code: 200, data: [{ url: page('jina', 1), title: 'Jina one', content: 'jina content' }] });
      case '/duckduckgo/html/':
        res.writeHead(200, { 'content-type': 'text/html' });
        return void res.end(`<html><body>
<div class="result results_links web-result"><div class="links_main links_deep result__body">
  <h2 class="result__title"><a class="result__a" href="//duckduckgo.com/l/?uddg=${encodeURIComponent(page('duckduckgo', 1))}&amp;rut=x">Duck <b>one</b></a></h2>
  <a class="result__snippet" href="//duckduckgo.com/l/?uddg=${encodeURIComponent(page('duckduckgo', 1))}">The <b>first</b> duck result</a>
</div></div>
<div class="result results_links result--ad"><div class="links_main result__body">
  <h2 class="result__title"><a class="result__a" href="https://duckduckgo.com/y.js?ad_domain=ads.example">An advert</a></h2>
  <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=ads.example">Buy things</a>
</div></div>
<div class="result results_links web-result"><div class="links_main links_deep result__body">
  <h2 class="result__title"><a class="result__a" href="${page('duckduckgo', 2)}">Duck two</a></h2>
  <a class="result__snippet" href="${page('duckduckgo', 2)}">Second duck result</a>
</div></div></body></html>`);
      case '/perplexity':
        return sendJson(res, 200, { citations: [page('perplexity', 1), page('perplexity', 2)], choices: [{ message: { role: 'assistant', content: `Perplexity answers ${body?.messages?.[1]?.content}` } }] });
      case '/perplexity-search':
        return sendJson(res, 200, { results: [{ url: page('perplexity_search', 1), title: 'PS one', snippet: 'ps snippet' }] });
      case '/external':
        if (req.headers.authorization !== 'Bearer external-key') return sendJson(res, 401, { detail: 'no' });
        return sendJson(res, 200, [{ link: page('external', 1), title: 'External one', snippet: `external ${body?.count}` }, { link: BLOCKED, title: 'Blocked', snippet: 'x' }]);
      case '/failing':
        return sendJson(res, 500, { error: 'down' });
      case '/plain.txt':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        return void res.end('Plain text page about comets.');
      case '/doc.pdf':
        res.writeHead(200, { 'content-type': 'application/pdf' });
        return void res.end(makePdf(['First PDF page about asteroids', 'Second PDF page']));
      case '/image.png':
        res.writeHead(200, { 'content-type': 'image/png' });
        return void res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
      case '/redirect':
        return void res.writeHead(302, { location: q.get('to') ?? '/' }).end();
      case '/big':
        res.writeHead(200, { 'content-type': 'text/plain' });
        return void res.end('x'.repeat(5000));
      case '/slow':
        return; // never answers
      case '/watch': {
        res.writeHead(200, { 'content-type': 'text/html' });
        const id = q.get('v');
        return void res.end(id === 'nokeyvideo1' ? '<html>nothing</html>' : `<html><script>ytcfg.set({"INNERTUBE_API_KEY":"fake-key","X":1});</script></html>`);
      }
      case '/youtubei/v1/player': {
        const id = body?.videoId;
        if (q.get('key') !== 'fake-key' || body?.context?.client?.clientName !== 'ANDROID') return sendJson(res, 400, { error: 'bad player call' });
        if (id === 'nocaptions1') return sendJson(res, 200, { playabilityStatus: { status: 'OK' } });
        const track = (lang: string, kind?: string) => ({ baseUrl: `${base}/timedtext?v=${id}&lang=${lang}${kind ? '&kind=asr' : ''}&fmt=srv3`, languageCode: lang, ...(kind ? { kind } : {}) });
        return sendJson(res, 200, { playabilityStatus: { status: 'OK' }, captions: { playerCaptionsTracklistRenderer: { captionTracks: [track('en', 'asr'), track('en'), track('de')] } } });
      }
      case '/timedtext':
        res.writeHead(200, { 'content-type': 'text/xml' });
        return void res.end(TIMED_TEXT[`${q.get('lang')}${q.get('kind') ? '-asr' : ''}`] ?? '');
    }
    if (url.pathname.startsWith('/pages/')) {
      pagesAtOnce.max = Math.max(pagesAtOnce.max, ++pagesAtOnce.now);
      // A little latency, so pages loaded together overlap.
      await new Promise((resolve) => setTimeout(resolve, 30));
      pagesAtOnce.now -= 1;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return void res.end(articleHtml(url.pathname.slice('/pages/'.length)));
    }
    res.writeHead(404).end('not here');
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  base = await listenLocally(server);
  return {
    url: base,
    requests,
    seen: (path) => requests.filter((r) => r.path === path),
    pagesAtOnce,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The fake web, and the process variables that point the fixed provider endpoints and YouTube at it. */
export function fakeWeb(): Fakes<{ web: FakeWeb }> {
  return {
    start: async () => ({ web: await startFakeWeb() }),
    env: ({ web }) => ({
      ENABLE_LOCAL_WEB_FETCH: 'true',
      BRAVE_SEARCH_API_URL: `${web.url}/brave`,
      TAVILY_API_URL: `${web.url}/tavily`,
      GOOGLE_PSE_API_URL: `${web.url}/google`,
      KAGI_SEARCH_API_URL: `${web.url}/kagi`,
      EXA_API_URL: `${web.url}/exa`,
      SERPER_API_URL: `${web.url}/serper`,
      SERPAPI_API_URL: `${web.url}/serpapi`,
      PERPLEXITY_API_URL: `${web.url}/perplexity`,
      DUCKDUCKGO_HTML_URL: `${web.url}/duckduckgo/html/`,
      YOUTUBE_BASE_URL: web.url,
    }),
  };
}
