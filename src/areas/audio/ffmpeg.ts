import { execFile } from 'node:child_process';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { HttpError } from '../../core/http/errors.js';

/**
 * What the reference does with pydub before speech-to-text, done with Debian's
 * `ffmpeg` and `ffprobe` (scripts/ensure-ffmpeg.sh): convert what providers do
 * not take to MP3, compress a recording over the chunk size to 16 kHz mono MP3
 * at 32 kbit/s, then cut it into pieces under that size.
 */
const run = promisify(execFile);
const MAX_OUTPUT = 16 * 1024 * 1024;

const ERROR_PROCESSING = (reason: string) => `Error processing audio file: ${reason}`;

/** Formats every speech-to-text provider takes as they are (the reference's SUPPORTED_FORMATS). */
const SUPPORTED_CODECS = new Set(['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'wav', 'webm']);

/**
 * Uploads are hostile: ffmpeg reads only the local file (a playlist inside cannot reach a URL or
 * other files: no HLS or concat demuxer) and gives up after a while on a file built to keep it busy.
 */
const INPUT_LIMITS = ['-protocol_whitelist', 'file', '-format_whitelist', 'mp3,wav,flac,ogg,matroska,webm,mov,mp4,m4a,aac,amr,caf,w64,aiff,au,asf,avi,mpeg,mpegts,s16le'];
const RUN_LIMITS = { maxBuffer: MAX_OUTPUT, timeout: 10 * 60_000, killSignal: 'SIGKILL' as const };

async function ffmpeg(args: string[]): Promise<void> {
  const input = args.indexOf('-i');
  try {
    await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args.slice(0, input), ...INPUT_LIMITS, ...args.slice(input)], RUN_LIMITS);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'ffmpeg is not installed' : String((error as { stderr?: string }).stderr || (error as Error).message).trim();
    throw new HttpError(400, `Audio conversion failed. The audio file may be corrupted or empty. (${reason.slice(0, 300)})`);
  }
}

interface Probe {
  codec: string;
  codecType: string;
  codecTag: string;
  durationMs: number;
}

/** The first stream's codec and the duration; null when ffprobe cannot read the file. */
async function probe(file: string): Promise<Probe | null> {
  try {
    const { stdout } = await run('ffprobe', ['-v', 'error', ...INPUT_LIMITS, '-show_entries', 'stream=codec_name,codec_type,codec_tag_string:format=duration', '-of', 'json', file], RUN_LIMITS);
    const info = JSON.parse(stdout) as { streams?: Record<string, string>[]; format?: { duration?: string } };
    const first = info.streams?.[0] ?? {};
    return {
      codec: (first.codec_name ?? '').toLowerCase(),
      codecType: (first.codec_type ?? '').toLowerCase(),
      codecTag: (first.codec_tag_string ?? '').toLowerCase(),
      durationMs: Math.round(Number.parseFloat(info.format?.duration ?? '0') * 1000),
    };
  } catch {
    return null;
  }
}

/** MP3 (an ID3 tag, or a frame sync with a layer: ADTS AAC has none) or FLAC, told by the first bytes. */
async function isMp3OrFlac(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(4), 0, 4, 0);
    const head = buffer.subarray(0, bytesRead);
    const text = head.toString('latin1');
    return text.startsWith('ID3') || text === 'fLaC' || (head[0] === 0xff && (head[1]! & 0xe0) === 0xe0 && (head[1]! & 0x06) !== 0);
  } finally {
    await handle.close();
  }
}

/**
 * The reference's `is_audio_conversion_required`: AAC in MP4 and codecs outside SUPPORTED_CODECS;
 * unreadable files are sent as they are. MP3 and FLAC are told from their first bytes, without
 * starting ffprobe (which takes tens of milliseconds, hundreds on a loaded machine).
 */
export async function needsConversion(file: string): Promise<boolean> {
  if (await isMp3OrFlac(file)) return false;
  const info = await probe(file);
  if (!info) return false;
  if (info.codec === 'aac' && info.codecType === 'audio' && info.codecTag === 'mp4a') return true;
  return !SUPPORTED_CODECS.has(info.codec);
}

/** `file` as MP3 in `dir` (the reference's `convert_audio_to_mp3`). */
export async function convertToMp3(file: string, dir: string): Promise<string> {
  const output = path.join(dir, `${path.parse(file).name}_converted.mp3`);
  await ffmpeg(['-i', file, '-vn', '-f', 'mp3', output]);
  return output;
}

/** Raw or any other audio to MP3 (the reference's `transcode_audio_to_mp3`, for speech answers); PCM is 16-bit at `rate` and `channels`. */
export async function transcodeToMp3(input: string, output: string, pcm: { rate: number; channels: number } | null): Promise<void> {
  const format = pcm ? ['-f', 's16le', '-ar', String(pcm.rate), '-ac', String(pcm.channels)] : [];
  await ffmpeg([...format, '-i', input, '-vn', '-f', 'mp3', output]);
}

/**
 * Pieces of `file` no larger than `maxBytes`, in order, written in `dir`: the file itself when it fits;
 * otherwise compressed, then cut by duration as the reference's `split_audio` does
 * (a first guess from the size ratio less a second, halved while a piece is too large).
 */
export async function splitForUpload(file: string, maxBytes: number, dir: string): Promise<string[]> {
  if ((await stat(file)).size <= maxBytes) return [file];
  const base = path.join(dir, path.parse(file).name);
  const compressed = `${base}_compressed.mp3`;
  await ffmpeg(['-i', file, '-vn', '-ar', '16000', '-ac', '1', '-b:a', '32k', '-f', 'mp3', compressed]);
  const size = (await stat(compressed)).size;
  if (size <= maxBytes) return [compressed];
  const durationMs = (await probe(compressed))?.durationMs ?? 0;
  if (durationMs <= 0) throw new HttpError(400, ERROR_PROCESSING('the duration of the recording could not be read'));
  const guessMs = Math.max(Math.floor(durationMs * (maxBytes / size)) - 1000, 1000);
  const pieces: string[] = [];
  const cut = async (target: string, startMs: number, endMs: number) =>
    ffmpeg(['-ss', (startMs / 1000).toFixed(3), '-t', ((endMs - startMs) / 1000).toFixed(3), '-i', compressed, '-b:a', '32k', '-f', 'mp3', target]);
  for (let start = 0, i = 0; start < durationMs; i++) {
    let end = Math.min(start + guessMs, durationMs);
    const piece = `${base}_chunk_${i}.mp3`;
    await cut(piece, start, end);
    while ((await stat(piece)).size > maxBytes && end - start > 5000) {
      end = start + Math.floor((end - start) / 2);
      await cut(piece, start, end);
    }
    if ((await stat(piece)).size > maxBytes) throw new HttpError(400, ERROR_PROCESSING('Audio chunk cannot be reduced below max file size.'));
    pieces.push(piece);
    start = end;
  }
  return pieces;
}
