"""Executing tool source and caching the resulting `Tools` instances.

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


@dataclass
class LoadedTool:
    hash: str
    instance: Any
    module: types.ModuleType


def load_tool_module(tool_id: str, content: str) -> tuple[Any, types.ModuleType]:
    """Runs the source as module `tool_<id>` and instantiates its `Tools` class."""
    name = f'tool_{tool_id}'
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
        if not hasattr(module, 'Tools'):
            raise Exception('No Tools class found in the module')
        return module.Tools(), module
    except BaseException:
        if sys.modules.get(name) is module:
            del sys.modules[name]
        raise


class ToolCache:
    """Loaded tools of this worker, keyed by tool id; a different content hash reloads."""

    def __init__(self) -> None:
        self._tools: dict[str, LoadedTool] = {}

    def get(self, tool_id: str, content_hash: str, content: str | None) -> LoadedTool:
        cached = self._tools.get(tool_id)
        if cached is not None and cached.hash == content_hash:
            return cached
        if content is None:
            raise HostError('not_loaded', f'Tool {tool_id} is not loaded in this worker')
        instance, module = load_tool_module(tool_id, content)
        loaded = LoadedTool(content_hash, instance, module)
        self._tools[tool_id] = loaded
        return loaded

    def forget(self, tool_id: str) -> None:
        loaded = self._tools.pop(tool_id, None)
        if loaded is not None and sys.modules.get(loaded.module.__name__) is loaded.module:
            del sys.modules[loaded.module.__name__]
