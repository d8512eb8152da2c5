"""Newline-delimited JSON between Node and this worker, requests in both directions.

    {"type": "request",  "id": 7, "method": "call", "params": {...}}
    {"type": "response", "id": 7, "result": ...}    or    {"type": "response", "id": 7, "error": {...}}
    {"type": "notify",   "method": "unload", "params": {...}}
    {"type": "ready", ...} / {"type": "fatal", ...}  (worker → Node, once, at start)

Each side numbers its own requests; a response answers a request of the side
that receives it. The reader runs in a thread so the event loop stays free for
tool code; everything else happens on the loop.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import sys
import threading
from typing import Any, Callable


class RemoteError(Exception):
    """Node answered one of this worker's requests with an error (`status`: an HTTP status, when it gave one)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _remote_error(error: Any) -> RemoteError:
    if isinstance(error, dict):
        status = error.get('status')
        return RemoteError(str(error.get('message')), status if isinstance(status, int) else None)
    return RemoteError(str(error))


def encode(message: dict) -> bytes:
    try:
        text = json.dumps(message, separators=(',', ':'), allow_nan=False)
    except ValueError:  # NaN or infinity somewhere: JSON cannot carry them
        text = json.dumps(_finite(message), separators=(',', ':'))
    return text.encode('utf-8') + b'\n'


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


class Channel:
    def __init__(self, read_fd: int, write_fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self._input = os.fdopen(read_fd, 'rb')
        self._write_fd = write_fd
        self._write_lock = threading.Lock()
        self._loop = loop
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        # Requests whose caller blocks its thread (possibly the loop's own) until Node answers.
        self._waiting: dict[int, _Waiter] = {}
        self._waiting_lock = threading.Lock()
        self.on_request: Callable[[dict], None] = lambda message: None
        self.on_notify: Callable[[dict], None] = lambda message: None
        self.on_close: Callable[[], None] = lambda: None

    def start(self) -> None:
        threading.Thread(target=self._read, name='parley-host-reader', daemon=True).start()

    def _read(self) -> None:
        for line in self._input:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                print(f'parley_host: unreadable message: {line[:200]!r}', file=sys.stderr)
                continue
            if not isinstance(message, dict):
                continue
            if message.get('type') == 'response' and self._answer_waiter(message):
                continue
            self._loop.call_soon_threadsafe(self._dispatch, message)
        with self._waiting_lock:
            waiters, self._waiting = list(self._waiting.values()), {}
        for waiter in waiters:
            waiter.settle(error=RemoteError('Node closed the channel'))
        # Here, not on the loop: tool code blocking the loop must not keep the worker alive.
        self.on_close()

    def _answer_waiter(self, message: dict) -> bool:
        """Answers a blocked caller here, in the reader thread: its thread may be the loop's."""
        with self._waiting_lock:
            waiter = self._waiting.pop(message.get('id'), None)
        if waiter is None:
            return False
        if 'error' in message:
            waiter.settle(error=_remote_error(message['error']))
        else:
            waiter.settle(result=message.get('result'))
        return True

    def _dispatch(self, message: dict) -> None:
        kind = message.get('type')
        if kind == 'request':
            self.on_request(message)
        elif kind == 'response':
            future = self._pending.pop(message.get('id'), None)
            if future is None or future.done():
                return
            if 'error' in message:
                future.set_exception(_remote_error(message['error']))
            else:
                future.set_result(message.get('result'))
        elif kind == 'notify':
            self.on_notify(message)

    def send(self, message: dict) -> None:
        data = memoryview(encode(message))
        with self._write_lock:
            while data:
                written = os.write(self._write_fd, data)
                data = data[written:]

    async def request(self, method: str, params: dict) -> Any:
        """Asks Node something (an event, a question for the user) and waits for the answer."""
        request_id = next(self._ids)
        future = self._loop.create_future()
        self._pending[request_id] = future
        self.send({'type': 'request', 'id': request_id, 'method': method, 'params': params})
        return await future

    def request_blocking(self, method: str, params: dict) -> Any:
        """The same, for synchronous code: blocks the calling thread (even the loop's) until Node answers.

        Node never waits on this worker to answer, so blocking the loop cannot deadlock;
        Node's own timeout for the request in flight bounds the wait.
        """
        request_id = next(self._ids)
        waiter = _Waiter()
        with self._waiting_lock:
            self._waiting[request_id] = waiter
        self.send({'type': 'request', 'id': request_id, 'method': method, 'params': params})
        return waiter.wait()


class _Waiter:
    def __init__(self) -> None:
        self._done = threading.Event()
        self._result: Any = None
        self._error: BaseException | None = None

    def settle(self, result: Any = None, error: BaseException | None = None) -> None:
        self._result, self._error = result, error
        self._done.set()

    def wait(self) -> Any:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._result
