import type { Dispatcher } from 'undici';
import { decodeEntities } from '../files/markup.js';

/**
 * YouTube transcripts, fetched the way the reference's loader does through
 * `youtube-transcript-api`: the watch page gives the InnerTube key, the player API
 * lists the caption tracks, and the chosen track's timed text is joined into one
 * text. Languages are tried in YOUTUBE_LOADER_LANGUAGE's order with English added
 * last; for each, a manually written track is preferred over a generated one.
 * YOUTUBE_LOADER_PROXY_URL sends every request through that proxy.
 */

const WATCH_HOSTS = new Set(['youtu.be', 'm.youtube.com', 'youtube.com', 'www.youtube.com', 'www.youtube-nocookie.com', 'vid.plus']);

/** The InnerTube client the library presents (its captions need no proof-of-origin token). */
const PLAYER_CLIENT = { clientName: 'ANDROID', clientVersion: '20.10.38' };

class TranscriptError extends Error {}

/** Whether the reference sends this URL to the YouTube loader. */
export function isYoutubeUrl(url: string): boolean {
  try {
    const { protocol, hostname } = new URL(url);
    return (protocol === 'http:' || protocol === 'https:') && WATCH_HOSTS.has(hostname);
  } catch {
    return false;
  }
}

/** The 11-character video id of a watch, short or embed URL (loaders/youtube.py _parse_video_id). */
function youtubeVideoId(url: string): string | null {
  if (!isYoutubeUrl(url)) return null;
  const parsed = new URL(url);
  const id = parsed.pathname.endsWith('/watch') ? parsed.searchParams.get('v') : parsed.pathname.replace(/^\/+/, '').split('/').pop();
  return id && id.length === 11 ? id : null;
}

interface CaptionTrack {
  baseUrl: string;
  languageCode: string;
  generated: boolean;
}

type Fetcher = (url: string, init: { method?: string; headers?: Record<string, string>; body?: string }) => Promise<{ status: number; text: string }>;

export class YoutubeTranscripts {
  /** The connections' dispatcher, made again when YOUTUBE_LOADER_PROXY_URL changes. */
  private dispatcher: { proxyUrl: string; agent: Dispatcher } | null = null;

  /** @param baseUrl https://www.youtube.com, or YOUTUBE_BASE_URL (a mirror, or a test's fake). */
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs: number,
  ) {}

  async close(): Promise<void> {
    await this.dispatcher?.agent.close();
  }

  private async agentFor(proxyUrl: string): Promise<Dispatcher> {
    if (this.dispatcher?.proxyUrl === proxyUrl) return this.dispatcher.agent;
    const { Agent, ProxyAgent } = await import('undici');
    const previous = this.dispatcher;
    this.dispatcher = { proxyUrl, agent: proxyUrl ? new ProxyAgent(proxyUrl) : new Agent() };
    void previous?.agent.close();
    return this.dispatcher.agent;
  }

  /** The transcript of the video at `url` (or of a bare video id), in the first language found. */
  async transcript(url: string, languages: readonly string[], proxyUrl: string): Promise<string> {
    const videoId = youtubeVideoId(url) ?? url;
    const dispatcher = await this.agentFor(proxyUrl);
    const fetch: Fetcher = async (target, init) => {
      const { request } = await import('undici');
      const response = await request(target, { method: (init.method ?? 'GET') as 'GET', headers: init.headers, body: init.body, dispatcher, signal: AbortSignal.timeout(this.timeoutMs) });
      return { status: response.statusCode, text: await response.body.text() };
    };
    const tracks = await this.tracks(videoId, fetch);
    const wanted = [...languages, ...(languages.includes('en') ? [] : ['en'])];
    for (const language of wanted) {
      const candidates = tracks.filter((track) => track.languageCode === language);
      const track = candidates.find((t) => !t.generated) ?? candidates[0];
      if (!track) continue;
      const answer = await fetch(track.baseUrl.replace('&fmt=srv3', ''), { headers: { 'accept-language': 'en-US' } });
      if (answer.status >= 400) throw new TranscriptError(`YouTube answered ${answer.status} for the ${language} transcript of ${videoId}`);
      const text = timedText(answer.text);
      if (text) return text;
    }
    throw new TranscriptError(
      `No transcript found for any of the specified languages: ${wanted.join(', ')}. Verify if the video has transcripts, add more languages if needed.`,
    );
  }

  private async tracks(videoId: string, fetch: Fetcher): Promise<CaptionTrack[]> {
    const headers = { 'accept-language': 'en-US' };
    let page = await fetch(`${this.baseUrl}/watch?v=${encodeURIComponent(videoId)}`, { headers });
    if (page.text.includes('action="https://consent.youtube.com/s"')) {
      const consent = /name="v" value="(.*?)"/.exec(page.text)?.[1];
      if (consent) page = await fetch(`${this.baseUrl}/watch?v=${encodeURIComponent(videoId)}`, { headers: { ...headers, cookie: `CONSENT=YES+${consent}` } });
    }
    const key = /"INNERTUBE_API_KEY":\s*"([a-zA-Z0-9_-]+)"/.exec(page.text)?.[1];
    if (page.status >= 400 || !key) throw new TranscriptError(`The YouTube video ${videoId} could not be read (no player data)`);
    const player = await fetch(`${this.baseUrl}/youtubei/v1/player?key=${key}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ context: { client: PLAYER_CLIENT }, videoId }),
    });
    if (player.status >= 400) throw new TranscriptError(`YouTube answered ${player.status} for the video ${videoId}`);
    const data = JSON.parse(player.text) as { captions?: { playerCaptionsTracklistRenderer?: { captionTracks?: unknown[] } }; playabilityStatus?: { status?: string; reason?: string } };
    const status = data.playabilityStatus?.status;
    if (status && status !== 'OK') throw new TranscriptError(`The YouTube video ${videoId} is unavailable: ${data.playabilityStatus?.reason ?? status}`);
    const list = data.captions?.playerCaptionsTracklistRenderer?.captionTracks;
    if (!Array.isArray(list)) throw new TranscriptError(`Subtitles are disabled for the YouTube video ${videoId}`);
    return list.flatMap((entry) => {
      const track = entry as { baseUrl?: unknown; languageCode?: unknown; kind?: unknown };
      return typeof track.baseUrl === 'string' && typeof track.languageCode === 'string'
        ? [{ baseUrl: new URL(track.baseUrl, this.baseUrl).href, languageCode: track.languageCode, generated: track.kind === 'asr' }]
        : [];
    });
  }
}

/** The pieces of a timed-text document (`<text start dur>…</text>`), each stripped of markup, joined by spaces. */
function timedText(xml: string): string {
  const pieces: string[] = [];
  for (const match of xml.matchAll(/<text\b[^>]*>([\s\S]*?)<\/text>/g)) {
    const piece = decodeEntities(decodeEntities(match[1]).replace(/<[^>]*>/g, '')).trim();
    pieces.push(piece);
  }
  return pieces.join(' ').trim();
}
