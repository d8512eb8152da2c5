"""Errors the host reports with a code of its own (everything else is the tool's exception)."""
from __future__ import annotations

import traceback


class HostError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def describe(error: BaseException) -> dict:
    """The wire form of an exception: what Node needs to build a clear error."""
    wire = {
        'code': error.code if isinstance(error, HostError) else 'python_error',
        'type': type(error).__name__,
        'message': str(error),
        'traceback': ''.join(traceback.format_exception(type(error), error, error.__traceback__))[-8000:],
    }
    if isinstance(error, ModuleNotFoundError) and error.name:
        wire['module'] = error.name
    return wire
