"""Calls from plugin code into Parley, as the user on whose behalf the plugin runs.

The `open_webui` compatibility package is built on this. Each call is a request
`api {token, op, args}` to Node, where `token` is the unguessable capability
Node gave the request in flight (a tool call). Node answers it as that request's
user and only while it runs: once the tool call has ended, the token is refused,
and a made-up one is refused always. The token travels in a context variable,
never a global, so tasks and `asyncio.to_thread` / `run_in_threadpool` threads
started by the call carry it, and code left behind by an earlier call does not.

The reference's model methods are `async` in 0.10.2 and were plain functions
before, and community tools use both forms. `compat` makes one implementation
serve both: awaited directly (`await Users.get_user_by_id(i)`), the method is a
coroutine; called plainly (`Users.get_user_by_id(i)`), it blocks until Node
answers and returns the value. Which form the caller used is read from the
caller's bytecode: the instruction after the call is `GET_AWAITABLE` exactly when
the result is awaited on the spot. A result kept to be awaited later
(`asyncio.gather(Users.get_user_by_id(a), ...)`) is therefore already the value;
await such calls one by one instead.
"""
from __future__ import annotations

import asyncio
import contextvars
import dis
import functools
import sys
import threading
from types import CodeType
from typing import Any, Callable, Coroutine, Generator

from .protocol import Channel, RemoteError
from .results import to_json

# The token of the request being served (server.py sets it per request task).
current_call: contextvars.ContextVar[str | None] = contextvars.ContextVar('parley_current_call', default=None)

_channel: Channel | None = None
_mode = threading.local()


def attach(channel: Channel) -> None:
    global _channel
    _channel = channel


class ParleyAPIError(Exception):
    """Parley refused or failed a call. `status_code` and `detail` as on FastAPI's HTTPException."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


class ParleyPermissionError(ParleyAPIError, PermissionError):
    """The calling user may not do this (401/403)."""


class ParleyValueError(ParleyAPIError, ValueError):
    """Parley refused the arguments (400/422)."""


def _params(op: str, args: dict) -> dict:
    call = current_call.get()
    if call is None or _channel is None:
        raise RuntimeError(
            f'open_webui ({op}): Parley can only be reached while a tool call made for a user is running: '
            'not at import or load time, and not from a thread the call did not start '
            '(use asyncio.to_thread or run_in_threadpool, which carry the call)'
        )
    # Models and other objects a plugin passes along (form data, metadata) travel as JSON.
    return {'token': call, 'op': op, 'args': to_json(args)}


def _error(error: RemoteError) -> ParleyAPIError:
    status = error.status or 500
    kind = {401: ParleyPermissionError, 403: ParleyPermissionError, 400: ParleyValueError, 422: ParleyValueError}.get(status, ParleyAPIError)
    return kind(status, str(error))


class api:
    """`await api(op, args)`: one request to Parley. Under `compat`'s blocking mode it does not suspend."""

    def __init__(self, op: str, args: dict) -> None:
        self.op, self.args = op, args

    def __await__(self) -> Generator[Any, None, Any]:
        params = _params(self.op, self.args)
        if getattr(_mode, 'blocking', False):
            try:
                return _ready(_channel.request_blocking('api', params))  # type: ignore[union-attr]
            except RemoteError as error:
                raise _error(error) from None
        return self._request(params).__await__()

    @staticmethod
    async def _request(params: dict) -> Any:
        try:
            return await _channel.request('api', params)  # type: ignore[union-attr]
        except RemoteError as error:
            raise _error(error) from None


class offload:
    """`await offload(fn, *args)`: slow synchronous work in a thread, or inline under blocking mode."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self.fn, self.args = fn, args

    def __await__(self) -> Generator[Any, None, Any]:
        if getattr(_mode, 'blocking', False):
            return _ready(self.fn(*self.args))
        return asyncio.to_thread(self.fn, *self.args).__await__()


def _ready(value: Any) -> Generator[Any, None, Any]:
    return value
    yield  # a generator that finishes at once with `value`


def run_blocking(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Runs a compat coroutine to its end in this thread; its awaits of `api`/`offload` block instead of suspending."""
    previous = getattr(_mode, 'blocking', False)
    _mode.blocking = True
    try:
        coroutine.send(None)
    except StopIteration as finished:
        return finished.value
    finally:
        _mode.blocking = previous
    coroutine.close()
    raise RuntimeError('internal: a compatibility call awaited something other than Parley')


_AWAITED: dict[tuple[CodeType, int], bool] = {}


def _awaited_by(frame: Any) -> bool:
    key = (frame.f_code, frame.f_lasti)
    known = _AWAITED.get(key)
    if known is None:
        # f_lasti is the call (3.9, 3.10, 3.13) or its last inline cache entry (3.11, 3.12):
        # either way the next real instruction is what happens to the result.
        following = next((i.opname for i in dis.get_instructions(frame.f_code) if i.offset > frame.f_lasti), None)
        known = _AWAITED[key] = following == 'GET_AWAITABLE'
    return known


def compat(method: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    """Makes an `async def` usable awaited or plain, as the caller's code expects (see the module doc)."""

    @functools.wraps(method)
    def either(*args: Any, **kwargs: Any) -> Any:
        coroutine = method(*args, **kwargs)
        if _awaited_by(sys._getframe(1)):
            return coroutine
        return run_blocking(coroutine)

    either.__wrapped_async__ = method  # type: ignore[attr-defined]
    return either
