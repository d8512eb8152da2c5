"""Running functions (pipes, filters, actions, event handlers) as the reference does.

Each handler gets `body` (or `event` for a filter's `stream`) and the reserved
extras it declares (functions.generate_function_chat_completion,
utils/filter.process_filter_functions, utils/actions.chat_action). A pipe that
returns a (sync or async) generator, an iterator or a streaming response is
streamed to Node one item at a time (`pipe_chunk`), while the call is in flight.
"""
from __future__ import annotations

import inspect
from typing import Any, Awaitable, Callable

from .calls import reserved_extras
from .errors import HostError
from .results import render_result, to_json
from .valves import make_valves

# Extras a function handler may declare; those not supplied are None.
FUNCTION_EXTRAS = (
    '__event_emitter__',
    '__event_call__',
    '__user__',
    '__metadata__',
    '__request__',
    '__model__',
    '__messages__',
    '__files__',
    '__chat_id__',
    '__session_id__',
    '__message_id__',
    '__task__',
    '__task_body__',
    '__tools__',
    '__oauth_token__',
    '__id__',
    '__event__',
    '__event_id__',
    '__event_name__',
    '__app__',
)

HANDLERS = {'pipe': 'pipe', 'inlet': 'inlet', 'outlet': 'outlet', 'stream': 'stream', 'action': 'action', 'event': 'event'}
# The argument a handler's payload is passed as: `event` for a filter's stream and an event function.
PAYLOAD_ARGUMENT = {'stream': 'event', 'event': 'event'}

Relay = Callable[[Any], Awaitable[Any]]


def describe_function(instance: Any, function_type: str) -> dict:
    """What create/update store besides the source: the type and the flags the chat layer reads."""
    return {
        'type': function_type,
        'toggle': bool(getattr(instance, 'toggle', None)) if function_type == 'filter' else False,
        'actions': _plain_list(getattr(instance, 'actions', None)) if function_type == 'action' else None,
        'events': _plain_list(getattr(instance, 'events', None)) if function_type == 'event' else None,
        'icon': next((v for v in (getattr(instance, 'icon_url', None), getattr(instance, 'icon', None)) if isinstance(v, str)), None),
        'has_user_valves': hasattr(instance, 'UserValves'),
        'file_handler': function_type == 'filter' and bool(getattr(instance, 'file_handler', False)),
    }


def _plain_list(value: Any) -> list | None:
    return to_json(value) if isinstance(value, (list, tuple)) else None


async def pipe_models(instance: Any) -> dict:
    """Whether the pipe is a manifold, its sub-pipes (a list, a sync or an async method) and its name prefix."""
    manifold = hasattr(instance, 'pipes')
    pipes = getattr(instance, 'pipes', None)
    if callable(pipes):
        pipes = pipes()
        if inspect.isawaitable(pipes):
            pipes = await pipes
    listed = [
        {'id': str(p['id']), 'name': str(p.get('name', p['id']))}
        for p in (pipes or [])
        if isinstance(p, dict) and 'id' in p
    ]
    prefix = getattr(instance, 'name', None)
    return {
        'manifold': manifold,
        'pipes': listed,
        'prefix': prefix if isinstance(prefix, str) else None,
        'has_user_valves': hasattr(instance, 'UserValves'),
    }


def apply_valves(instance: Any, params: dict) -> None:
    if hasattr(instance, 'valves') and hasattr(instance, 'Valves'):
        stored = {k: v for k, v in (params.get('valves') or {}).items() if v is not None}
        instance.valves = make_valves(instance.Valves, stored)


def priority_of(instance: Any, params: dict) -> Any:
    """A filter's order: its `priority` valve (0 without one)."""
    if not hasattr(instance, 'Valves'):
        return 0
    try:
        valves = make_valves(instance.Valves, params.get('valves'))
    except Exception:
        return 0
    priority = getattr(valves, 'priority', 0)
    return priority if isinstance(priority, (int, float)) else 0


async def run_function(
    function_id: str,
    instance: Any,
    params: dict,
    event_emitter: Relay | None,
    event_call: Relay | None,
    send_chunk: Relay,
) -> Any:
    operation = str(params.get('operation'))
    if operation == 'pipes':
        apply_valves(instance, params)
        return await pipe_models(instance)
    if operation == 'priority':
        return priority_of(instance, params)
    handler_name = HANDLERS.get(operation)
    handler = getattr(instance, handler_name, None) if handler_name else None
    if handler is None or not callable(handler):
        raise HostError('function_not_found', f'Function "{function_id}" has no {handler_name or operation}')
    apply_valves(instance, params)

    user = dict(params.get('user') or {})
    if hasattr(instance, 'UserValves'):
        try:
            user['valves'] = make_valves(instance.UserValves, params.get('user_valves'))
        except Exception:
            user['valves'] = instance.UserValves()
    extras = reserved_extras(FUNCTION_EXTRAS, params, event_emitter, event_call, user)
    # The function's id, unless the caller names another (an action's sub-action).
    if extras['__id__'] is None:
        extras['__id__'] = function_id

    signature = inspect.signature(handler)
    arguments = {PAYLOAD_ARGUMENT.get(operation, 'body'): params.get('body')}
    # An event function taking **kwargs gets every extra (dispatch_event_functions); other handlers those they declare.
    takes_all = operation == 'event' and any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    arguments.update({name: value for name, value in extras.items() if takes_all or name in signature.parameters})
    result = handler(**arguments)
    if inspect.isawaitable(result):
        result = await result
    if operation == 'action':
        # An HTMLResponse (or its tuple form) becomes an embed, as process_tool_result does for actions.
        rendered = render_result(function_id, result)
        if rendered['embeds']:
            return {'kind': 'value', 'value': rendered['text'], 'embeds': rendered['embeds']}
    if operation != 'pipe':
        return {'kind': 'value', 'value': to_json(result)}
    return await _pipe_result(result, send_chunk)


async def _pipe_result(result: Any, send_chunk: Relay) -> dict:
    """A pipe's answer: text, a JSON value, or a stream already sent chunk by chunk."""
    if isinstance(result, (str, bytes)):
        return {'kind': 'text', 'text': result.decode('utf-8', 'replace') if isinstance(result, bytes) else result}
    if isinstance(result, dict) or hasattr(result, 'model_dump'):
        return {'kind': 'json', 'value': to_json(result)}
    body_iterator = getattr(result, 'body_iterator', None)  # a StreamingResponse: its bytes as they come
    source = body_iterator if body_iterator is not None else result
    if hasattr(source, '__aiter__'):
        async for item in source:
            await send_chunk(_chunk(item, raw=body_iterator is not None))
        return {'kind': 'stream'}
    if hasattr(source, '__iter__'):
        for item in source:
            await send_chunk(_chunk(item, raw=False))
        return {'kind': 'stream'}
    return {'kind': 'text', 'text': '' if result is None else str(result)}


def _chunk(item: Any, raw: bool) -> dict:
    """One streamed item: bytes of an SSE body (`raw`), a `data:` line, a JSON object, or text."""
    if isinstance(item, (bytes, bytearray)):
        item = bytes(item).decode('utf-8', 'replace')
    if raw:
        return {'raw': item if isinstance(item, str) else str(item)}
    if isinstance(item, dict) or hasattr(item, 'model_dump'):
        return {'json': to_json(item)}
    return {'text': item if isinstance(item, str) else str(item)}
