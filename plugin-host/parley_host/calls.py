"""Running one tool function the way the reference's chat middleware does.

Only the reserved extras a function declares are passed; model arguments are
coerced per annotation exactly as `get_async_tool_function_and_apply_extra_params`
does (str → int for `int`/`Optional[int]`, number → str for `str`/`Optional[str]`,
nothing else); sync functions run directly on the event loop, as there.
"""
from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any, Awaitable, Callable, get_args, get_type_hints
from urllib.parse import urlsplit

from .errors import HostError
from .specs import is_public_function
from .valves import make_valves

# Every extra the reference offers a local tool; absent ones are passed as None.
RESERVED_EXTRAS = (
    '__event_emitter__',
    '__event_call__',
    '__user__',
    '__metadata__',
    '__oauth_token__',
    '__request__',
    '__model__',
    '__chat_id__',
    '__message_id__',
    '__messages__',
    '__files__',
    '__id__',
)


def coerce_arguments(signature: inspect.Signature, hints: dict, arguments: dict) -> dict:
    for name, value in arguments.items():
        if name not in signature.parameters or value is None:
            continue
        annotation = hints.get(name, signature.parameters[name].annotation)
        members = set(get_args(annotation))
        if isinstance(value, str) and (annotation is int or members == {int, type(None)}):
            arguments[name] = int(value)
        elif (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and (annotation is str or members == {str, type(None)})
        ):
            arguments[name] = str(value)
    return arguments


def reserved_extras(
    names: tuple[str, ...],
    params: dict,
    event_emitter: Callable[[Any], Awaitable[Any]] | None,
    event_call: Callable[[Any], Awaitable[Any]] | None,
    user: dict,
) -> dict:
    """The extras a call offers: each of `names`, None unless Node sent it, with the call's own emitter, user and request."""
    extras = {name: None for name in names}
    extras.update({name: value for name, value in (params.get('extras') or {}).items() if name in extras})
    extras.update(
        {
            '__event_emitter__': event_emitter,
            '__event_call__': event_call,
            '__user__': user,
            '__metadata__': params.get('metadata'),
            '__request__': MinimalRequest(params.get('request')),
        }
    )
    return extras


class MinimalRequest:
    """Stands in for the Starlette request a tool may read (`__request__`)."""

    def __init__(self, data: dict | None) -> None:
        data = data or {}
        self.method = data.get('method', 'POST')
        self.url = _URL(data.get('url', ''))
        self.base_url = _URL(data.get('base_url', ''))
        self.headers = _Headers(data.get('headers') or {})
        self.cookies = dict(data.get('cookies') or {})
        self.query_params = dict(data.get('query_params') or {})
        self.client = SimpleNamespace(host=data.get('client_host'), port=None)
        self.state = SimpleNamespace()
        self.app = SimpleNamespace(state=SimpleNamespace(config=SimpleNamespace()))

    def __repr__(self) -> str:
        return f'<MinimalRequest {self.method} {self.url}>'


class _URL(str):
    """A URL string with the parts Starlette's URL exposes."""

    @property
    def _parts(self) -> Any:
        return urlsplit(self)

    scheme = property(lambda self: self._parts.scheme)
    netloc = property(lambda self: self._parts.netloc)
    hostname = property(lambda self: self._parts.hostname)
    port = property(lambda self: self._parts.port)
    path = property(lambda self: self._parts.path)
    query = property(lambda self: self._parts.query)


class _Headers(dict):
    """Case-insensitive header lookup, as Starlette's Headers offers."""

    def __init__(self, headers: dict) -> None:
        super().__init__({str(key).lower(): str(value) for key, value in headers.items()})

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> Any:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())


async def call_tool_function(
    tool_id: str,
    instance: Any,
    function_name: str,
    arguments: dict,
    params: dict,
    event_emitter: Callable[[Any], Awaitable[Any]] | None,
    event_call: Callable[[Any], Awaitable[Any]] | None,
) -> Any:
    if not is_public_function(instance, function_name):
        raise HostError('function_not_found', f'Tool "{function_name}" not found in tool "{tool_id}"')

    # Admin valves go on the shared instance, only when it keeps them (reference get_tools).
    if hasattr(instance, 'valves') and hasattr(instance, 'Valves'):
        instance.valves = make_valves(instance.Valves, params.get('valves'))
    user = dict(params.get('user') or {})
    if hasattr(instance, 'UserValves'):
        user['valves'] = make_valves(instance.UserValves, params.get('user_valves'))

    extras = reserved_extras(RESERVED_EXTRAS, params, event_emitter, event_call, user)
    extras['__id__'] = tool_id

    function = getattr(instance, function_name)
    signature = inspect.signature(function)
    try:
        hints = get_type_hints(function)
    except Exception:
        hints = {}
    bound = {name: value for name, value in extras.items() if name in signature.parameters}
    # The model never supplies reserved names; the chat layer filters to spec properties anyway.
    model_arguments = {name: value for name, value in (arguments or {}).items() if not name.startswith('__')}
    result = function(**bound, **coerce_arguments(signature, hints, model_arguments))
    if inspect.isawaitable(result):
        result = await result
    return result
