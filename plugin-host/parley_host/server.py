"""The methods Node can call on a worker."""
from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from typing import Any

from . import bridge
from .calls import call_tool_function
from .errors import HostError, describe
from .frontmatter import extract_frontmatter, requirements_of
from .functions import describe_function, run_function
from .loader import ToolCache
from .protocol import Channel, RemoteError
from .results import render_result, to_json
from .specs import tool_specs
from .valves import class_schema, validate_valves, valves_spec


class Host:
    def __init__(self, channel: Channel, end_strays: bool = False) -> None:
        self.channel = channel
        # Alone in a PID namespace: every other process there belongs to a call that has ended.
        self.end_strays = end_strays
        self.tools = ToolCache()
        self.methods = {
            'frontmatter': self.frontmatter,
            'extract': self.extract,
            'valves_spec': self.valves_spec,
            'validate_valves': self.validate_valves,
            'call': self.call,
            'function': self.function,
        }
        channel.on_request = self._on_request
        channel.on_notify = self._on_notify
        bridge.attach(channel)

    def _on_request(self, message: dict) -> None:
        asyncio.ensure_future(self._serve(message))

    def _on_notify(self, message: dict) -> None:
        if message.get('method') == 'unload':
            params = message.get('params') or {}
            self.tools.forget(str(params.get('tool_id')), str(params.get('unit') or 'tool'))

    async def _serve(self, message: dict) -> None:
        request_id = message.get('id')
        method = self.methods.get(message.get('method'))
        params = message.get('params') or {}
        token = params.get('call_token')
        # Plugin code run for this request may call Parley as its user (bridge.py);
        # each request is served in its own task, so the token stays with this one.
        bridge.current_call.set(token if params.get('bridge') else None)
        fatal = False
        try:
            if method is None:
                raise HostError('bad_request', f'Unknown method {message.get("method")!r}')
            reply = {'type': 'response', 'id': request_id, 'result': await method(params, request_id)}
        except BaseException as error:  # tool code may raise anything, SystemExit included
            fatal = isinstance(error, MemoryError)
            reply = {'type': 'response', 'id': request_id, 'error': describe(error)}
            if fatal:
                reply['error']['code'] = 'memory'
        if self.end_strays:
            # Before the reply: when Node learns the call ended, its processes are gone.
            end_strays()
        try:
            self.channel.send(reply)
        except (TypeError, ValueError) as error:
            self.channel.send({'type': 'response', 'id': request_id, 'error': describe(error)})
        if fatal:
            # After a MemoryError the interpreter's state is suspect: Node replaces this worker.
            sys.stderr.flush()
            os._exit(70)

    def _loaded(self, params: dict) -> Any:
        kind = str(params.get('unit') or 'tool')
        return self.tools.get(str(params['tool_id']), str(params['hash']), params.get('content'), kind)

    def _tool(self, params: dict) -> Any:
        return self._loaded(params).instance

    async def frontmatter(self, params: dict, request_id: Any) -> dict:
        frontmatter = extract_frontmatter(params['content'])
        return {'frontmatter': frontmatter, 'requirements': requirements_of(frontmatter)}

    async def extract(self, params: dict, request_id: Any) -> dict:
        """Everything create/update store: manifest, specs (tools) or type and flags (functions), valves schemas."""
        loaded = self._loaded(params)
        instance = loaded.instance
        return {
            'frontmatter': extract_frontmatter(params['content']),
            'specs': tool_specs(instance) if loaded.type == 'tool' else [],
            'function': describe_function(instance, loaded.type) if loaded.type != 'tool' else None,
            'has_valves': hasattr(instance, 'Valves'),
            'has_user_valves': hasattr(instance, 'UserValves'),
            'valves_schema': _schema_or_none(instance, 'Valves'),
            'user_valves_schema': _schema_or_none(instance, 'UserValves'),
        }

    async def valves_spec(self, params: dict, request_id: Any) -> Any:
        return valves_spec(self._tool(params), params['kind'], params.get('user'))

    async def validate_valves(self, params: dict, request_id: Any) -> dict:
        return validate_valves(self._tool(params), params['kind'], params.get('values') or {})

    async def call(self, params: dict, request_id: Any) -> dict:
        tool_id = str(params['tool_id'])
        instance = self._tool(params)
        function_name = str(params['function'])
        result = await call_tool_function(
            tool_id,
            instance,
            function_name,
            params.get('args') or {},
            params,
            self._relay('event_emitter', params.get('call_token')) if params.get('event_emitter') else None,
            self._relay('event_call', params.get('call_token')) if params.get('event_call') else None,
        )
        value = to_json(result)
        return {'value': value, **render_result(function_name, result)}

    async def function(self, params: dict, request_id: Any) -> Any:
        """One operation of a function: a pipe, a filter's inlet/stream/outlet, an action, an event, or its sub-pipes."""
        token = params.get('call_token')
        return await run_function(
            str(params['tool_id']),
            self._tool(params),
            params,
            self._relay('event_emitter', token) if params.get('event_emitter') else None,
            self._relay('event_call', token) if params.get('event_call') else None,
            self._relay('pipe_chunk', token, key='chunk'),
        )

    def _relay(self, method: str, token: Any, key: str = 'event') -> Any:
        """An async callable that hands an event to Node for the call holding `token` (refused once it ended)."""

        async def relay(event: Any) -> Any:
            try:
                return await self.channel.request(method, {'token': token, key: to_json(event)})
            except RemoteError as error:
                return {'error': str(error)}

        relay.__name__ = f'__{method}__'
        return relay


def _schema_or_none(instance: Any, kind: str) -> dict | None:
    cls = getattr(instance, kind, None)
    if cls is None:
        return None
    try:
        return class_schema(cls)
    except Exception:  # the create does not depend on it (the reference computes it on demand)
        return None


def end_strays() -> None:
    """Kills every process of this PID namespace but this worker (and bwrap's init), and waits until they are gone.

    In a private namespace /proc lists exactly the processes tool code started,
    setsid'd and double-forked ones included. Only our own children are waited
    for, by pid: a global reaper would steal the waits of subprocesses still running.
    Orphans belong to the namespace's init (bwrap's, or this worker under unshare).
    """
    me = os.getpid()
    deadline = time.monotonic() + 2
    while True:
        others = [pid for pid in _pids() if pid not in (me, 1)]
        if not others or time.monotonic() > deadline:
            return
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in others:
            _reap(pid, me)
        if me == 1:
            _reap_orphans()
        time.sleep(0.001)  # killed orphans: their init reaps them


def _reap_orphans() -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _pids() -> list[int]:
    return [int(name) for name in os.listdir('/proc') if name.isdigit()]


def _reap(pid: int, me: int) -> None:
    try:
        with open(f'/proc/{pid}/stat', 'rb') as stat:
            parent = int(stat.read().rsplit(b')', 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return
    if parent != me:
        return  # reparented to the namespace's init, which reaps it
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
