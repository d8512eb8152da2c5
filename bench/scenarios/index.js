import analytics from './analytics.js';
import audio from './audio.js';
import authsSession from './auths-session.js';
import { channelFanout, channelMessages } from './channels.js';
import chatsList from './chats-list.js';
import files from './files.js';
import firstChunk from './first-chunk.js';
import functions from './functions.js';
import importOpenWebui from './import.js';
import memoriesQuery from './memories-query.js';
import modelsList from './models-list.js';
import notesFanout from './notes-fanout.js';
import promptsList from './prompts-list.js';
import retrieval from './retrieval.js';
import retrievalDocuments from './retrieval-documents.js';
import retrievalRecall from './retrieval-recall.js';
import scheduler from './scheduler.js';
import socketChats from './socket-chats.js';
import streams from './streams.js';
import toolCall from './tool-call.js';
import toolsList from './tools-list.js';
import version from './version.js';

/**
 * Every scenario of the bench, in order: setups run in this order on one Parley
 * before anything is timed, then the scenarios are timed in this order. Two kinds:
 *
 * - A request-rate comparison, `{ name, request?, setup?(ctx), rpsRatioTarget? }`:
 *   `setup` seeds data through `ctx` (see ../lib/context.js) and returns the
 *   request `{ method, path, headers, body }`, overriding the static `request`.
 *   The bench loads Parley and a bare Fastify floor answering Parley's own answer
 *   to that request, and reports req/s, latencies and CPU per request.
 *   `rpsRatioTarget` is the least Parley/floor req/s ratio (default 0.7).
 * - A measurement of its own, `{ name, setup?(ctx), measure(ctx, prepared) }`:
 *   `measure` gets what `setup` returned and does its own timing (streams, sockets),
 *   returning `{ rows, details }`: table rows made with `row()` of ../lib/report.js
 *   (their "floor" is whatever the scenario compares with, e.g. the fake provider
 *   reached directly) and anything worth keeping in latest.json.
 */
export const scenarios = [
  ...[version, authsSession, toolsList, chatsList, modelsList, promptsList, firstChunk, streams, socketChats, notesFanout, memoriesQuery, toolCall],
  ...[files, retrieval, retrievalRecall, retrievalDocuments, channelMessages, channelFanout, analytics, functions, scheduler, audio, importOpenWebui],
];
