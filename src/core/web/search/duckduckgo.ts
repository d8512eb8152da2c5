import type { SearchProvider } from './context.js';
import { SearchHttpError } from './http.js';
import { filterByDomain, type Json, result } from './results.js';

/**
 * DuckDuckGo through its HTML endpoint, as the reference's `ddgs` library does with
 * its `duckduckgo` backend: a form POST, results read from the page (a block with a
 * heading: the heading's text is the title, the block's link its address, the link's
 * text the snippet). Adverts are left out. No key.
 */
export const searchDuckDuckGo: SearchProvider = async (query, { http, endpoints, count, filterList }) => {
  const { status, text } = await http.send(endpoints.duckduckgo, {
    method: 'POST',
    headers: { 'User-Agent': 'Mozilla/5.0 (compatible; Open WebUI RAG Bot)', Referer: 'https://html.duckduckgo.com/' },
    form: { q: query, b: '', l: 'us-en', kp: '-1' },
  });
  if (status >= 400) throw new SearchHttpError(status, endpoints.duckduckgo);
  return filterByDomain(await duckDuckGoResults(text), filterList)
    .slice(0, count)
    .map((item) => result(item.href, item.title, item.body));
};

/** `{href, title, body}` of each result on a results page, without adverts and duplicates. */
async function duckDuckGoResults(html: string): Promise<Json[]> {
  const { parseHTML } = await import('linkedom');
  const { document } = parseHTML(html);
  const seen = new Set<string>();
  const items: Json[] = [];
  for (const block of document.querySelectorAll('div')) {
    const heading = [...block.children].find((child) => child.tagName === 'H2');
    const link = [...block.children].find((child) => child.tagName === 'A');
    if (!heading) continue;
    const href = unwrapRedirect(link?.getAttribute('href') ?? heading.querySelector('a')?.getAttribute('href') ?? '');
    if (!href || seen.has(href) || href.startsWith('https://duckduckgo.com/y.js?ad_domain') || href.startsWith('http://www.google.com/search?q=')) continue;
    seen.add(href);
    items.push({ href, title: squeeze(heading.textContent), body: squeeze(link?.textContent ?? '') });
  }
  return items;
}

/** Links through `//duckduckgo.com/l/?uddg=<url>` point at the URL. */
function unwrapRedirect(href: string): string {
  if (!href.includes('duckduckgo.com/l/?')) return href;
  try {
    return new URL(href, 'https://duckduckgo.com').searchParams.get('uddg') ?? href;
  } catch {
    return href;
  }
}

const squeeze = (text: string | null) => (text ?? '').replace(/\s+/g, ' ').trim();
