"""Executing tool and function source and caching the resulting instances.

A tool defines `Tools`; a function (Pipe, Filter, Action or Event) its class,
looked for in the reference's order (utils/plugin.load_function_module_by_id).

The reference runs `exec(content)` from a module that has
`from __future__ import annotations`, so tool code is compiled with postponed
annotations: every annotation is a string resolved later by `get_type_hints`.
That changes which tools load and which specs come out, so it is reproduced.
"""
from __future__ import annotations

import __future__
import importlib
import linecache
import os
import sys
import tempfile
import types
from dataclasses import dataclass
from typing import Any

from .errors import HostError

_COMPILE_FLAGS = __future__.annotations.compiler_flag


# The classes a function may define, in the order the reference looks for them, with the type each gives.
FUNCTION_CLASSES = (('Pipe', 'pipe'), ('Filter', 'filter'), ('Action', 'action'), ('Event', 'event'))


@dataclass
class LoadedTool:
    hash: str
    instance: Any
    module: types.ModuleType
    # 'tool' for a tool; a function's type otherwise.
    type: str = 'tool'


def _instantiate(module: types.ModuleType, kind: str) -> tuple[Any, str]:
    if kind != 'function':
        if not hasattr(module, 'Tools'):
            raise Exception('No Tools class found in the module')
        return module.Tools(), 'tool'
    for class_name, function_type in FUNCTION_CLASSES:
        if hasattr(module, class_name):
            return getattr(module, class_name)(), function_type
    raise Exception('No Function class found in the module')


def load_tool_module(tool_id: str, content: str, kind: str = 'tool') -> tuple[Any, types.ModuleType, str]:
    """Runs the source as module `tool_<id>` (`function_<id>`) and instantiates its class."""
    name = f'{"function" if kind == "function" else "tool"}_{tool_id}'
    # A path that looks like the reference's temporary file: tracebacks and
    # SyntaxError messages name the tool, and `inspect.getsource` works through linecache.
    filename = os.path.join(tempfile.gettempdir(), f'{name}.py')
    module = types.ModuleType(name)
    module.__dict__['__file__'] = filename
    sys.modules[name] = module
    try:
        code = compile(content, filename, 'exec', flags=_COMPILE_FLAGS, dont_inherit=True)
        linecache.cache[filename] = (len(content), None, content.splitlines(True), filename)
        importlib.invalidate_caches()
        exec(code, module.__dict__)
        instance, loaded_type = _instantiate(module, kind)
        return instance, module, loaded_type
    except BaseException:
        if sys.modules.get(name) is module:
            del sys.modules[name]
        raise


def cache_key(tool_id: str, kind: str) -> str:
    """Tools and functions have separate id spaces."""
    return f'function:{tool_id}' if kind == 'function' else tool_id


class ToolCache:
    """Loaded tools and functions of this worker, keyed by kind and id; a different content hash reloads."""

    def __init__(self) -> None:
        self._tools: dict[str, LoadedTool] = {}

    def get(self, tool_id: str, content_hash: str, content: str | None, kind: str = 'tool') -> LoadedTool:
        key = cache_key(tool_id, kind)
        cached = self._tools.get(key)
        if cached is not None and cached.hash == content_hash:
            return cached
        if content is None:
            raise HostError('not_loaded', f'Tool {tool_id} is not loaded in this worker')
        instance, module, loaded_type = load_tool_module(tool_id, content, kind)
        loaded = LoadedTool(content_hash, instance, module, loaded_type)
        self._tools[key] = loaded
        return loaded

    def forget(self, tool_id: str, kind: str = 'tool') -> None:
        loaded = self._tools.pop(cache_key(tool_id, kind), None)
        if loaded is not None and sys.modules.get(loaded.module.__name__) is loaded.module:
            del sys.modules[loaded.module.__name__]
