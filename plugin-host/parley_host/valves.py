"""`Valves` / `UserValves`: schemas for the valves/spec routes and validation of updates."""
from __future__ import annotations

import inspect
import json
import logging
import warnings
from typing import Any

from .errors import HostError

log = logging.getLogger('parley_host')

KINDS = ('Valves', 'UserValves')


def valves_class(instance: Any, kind: str) -> Any:
    if kind not in KINDS:
        raise HostError('bad_request', f'Unknown valves kind {kind!r}')
    return getattr(instance, kind, None)


def class_schema(cls: Any) -> dict:
    """`Valves.schema()` as the reference calls it (pydantic 2: `model_json_schema`, titles kept)."""
    if hasattr(cls, 'model_json_schema'):
        return cls.model_json_schema()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return cls.schema()


def valves_spec(instance: Any, kind: str, user: dict | None) -> dict | None:
    cls = valves_class(instance, kind)
    if cls is None:
        return None
    return resolve_options(cls, class_schema(cls), user)


def resolve_options(cls: Any, schema: dict, user: dict | None) -> dict:
    """Fills `input.options` of select fields; a string names a class method that lists them.

    Such a method gets the user as `__user__` and/or `user` when it declares them;
    anything that fails or is not a list leaves the property as it was.
    """
    if not schema or 'properties' not in schema or not hasattr(cls, 'model_fields'):
        return schema
    schema = dict(schema)
    schema['properties'] = dict(schema['properties'])
    for name, prop in list(schema['properties'].items()):
        field = cls.model_fields.get(name)
        extra = getattr(field, 'json_schema_extra', None) if field else None
        if not isinstance(extra, dict):
            continue
        input_config = extra.get('input')
        if not isinstance(input_config, dict) or input_config.get('options') is None:
            continue
        options = input_config['options']
        if isinstance(options, str) and options:
            options = _call_options_method(cls, options, name, user)
            if options is None:
                continue
        elif not isinstance(options, list):
            continue
        prop = dict(prop)
        prop['input'] = dict(prop['input']) if 'input' in prop else {'type': 'select'}
        prop['input']['options'] = options
        schema['properties'][name] = prop
    return schema


def _call_options_method(cls: Any, method_name: str, field: str, user: dict | None) -> list | None:
    method = getattr(cls, method_name, None)
    if method is None or not callable(method):
        log.warning("options '%s' not found or not callable on %s", method_name, cls.__name__)
        return None
    try:
        params = inspect.signature(method).parameters
        kwargs = {}
        if user is not None:
            if '__user__' in params:
                kwargs['__user__'] = user
            if 'user' in params:
                kwargs['user'] = user
        options = method(**kwargs)
    except Exception as error:  # a broken options method must not break the spec
        log.warning('Failed to resolve options for %s: %s', field, error)
        return None
    if not isinstance(options, list):
        log.warning("Method '%s' did not return a list for %s", method_name, field)
        return None
    return options


def validate_valves(instance: Any, kind: str, values: dict) -> dict:
    """What the update routes store: only the keys sent (nulls dropped), coerced by the model."""
    cls = valves_class(instance, kind)
    if cls is None:
        raise HostError('no_valves', f'The tool has no {kind} class')
    sent = {key: value for key, value in values.items() if value is not None}
    try:
        dumped = cls(**sent).model_dump(exclude_unset=True)
        # The reference stores the dump in a JSON column: values JSON cannot hold fail the update.
        return json.loads(json.dumps(dumped))
    except Exception as error:
        raise HostError('invalid_valves', str(error)) from error


def make_valves(cls: Any, stored: dict | None) -> Any:
    return cls(**(stored or {}))
