"""Function specs of a `Tools` instance, as the reference stores them.

The reference builds a pydantic model per function (`convert_function_to_pydantic_model`),
turns it into an OpenAI function with langchain-core's `convert_to_openai_function`
(inline `$ref`s, lift title and description, drop `title` keys) and cleans the
result (`clean_openai_tool_schema`). The same steps are done here with pydantic 2
alone; the output must match byte for byte (docs/plugin-host.md, tools.md §4).
"""
from __future__ import annotations

import copy
import inspect
import re
from typing import Any, Callable, get_type_hints

from pydantic import Field, create_model

_PARAM_LINE = re.compile(r':param (\w+):\s*(.+)')


def tool_specs(instance: Any) -> list[dict]:
    return [function_spec(function) for function in public_functions(instance)]


def public_functions(instance: Any) -> list[Callable]:
    """Callable, non-class attributes not starting with `_`, in `dir()` order."""
    functions = []
    for name in dir(instance):
        attribute = getattr(instance, name)
        if callable(attribute) and not name.startswith('_') and not inspect.isclass(attribute):
            functions.append(attribute)
    return functions


def is_public_function(instance: Any, name: str) -> bool:
    if name.startswith('_') or not hasattr(instance, name):
        return False
    attribute = getattr(instance, name)
    return callable(attribute) and not inspect.isclass(attribute)


def docstring_description(docstring: str | None) -> str:
    """Stripped lines up to the first `:param` / `:return` line, blank lines kept."""
    if not docstring:
        return ''
    kept = []
    for line in (line.strip() for line in docstring.strip().split('\n')):
        if line.startswith(':param') or line.startswith(':return'):
            break
        kept.append(line)
    return '\n'.join(kept)


def docstring_params(docstring: str | None) -> dict[str, str]:
    """`:param name: text` lines anywhere in the docstring; reserved `__` names skipped."""
    if not docstring:
        return {}
    params = {}
    for line in docstring.splitlines():
        match = _PARAM_LINE.match(line.strip())
        if match and not match.group(1).startswith('__'):
            params[match.group(1)] = match.group(2)
    return params


def function_model(function: Callable) -> type:
    """The pydantic model of a function's parameters; `_`-prefixed ones vanish in pydantic."""
    hints = get_type_hints(function)
    parameters = inspect.signature(function).parameters
    docstring = function.__doc__
    descriptions = docstring_params(docstring)
    fields: dict[str, Any] = {}
    for name, parameter in parameters.items():
        hint = hints.get(name, Any)
        default = parameter.default if parameter.default is not parameter.empty else ...
        description = descriptions.get(name)
        fields[name] = (hint, Field(default, description=description)) if description else (hint, default)
    model = create_model(function.__name__, **fields)
    model.__doc__ = docstring_description(docstring)
    return model


def function_spec(function: Callable) -> dict:
    schema = function_model(function).model_json_schema()
    spec = openai_function(schema)
    clean_schema(spec['parameters'])
    return spec


def openai_function(schema: dict) -> dict:
    """langchain-core's model → function conversion: inline refs, lift title/description, drop titles."""
    schema = inline_refs(schema, schema, set())
    schema.pop('definitions', None)
    schema.pop('$defs', None)
    name = schema.pop('title', '')
    description = schema.pop('description', '')
    return {'name': name, 'description': description, 'parameters': without_titles(schema)}


def inline_refs(node: Any, root: dict, resolving: set[str]) -> Any:
    """Replaces each `$ref` by a copy of its target merged with the ref's sibling keys.

    A ref met again while its own target is being inlined (a cycle) keeps only its
    sibling keys. Nothing under `$defs` is touched.
    """
    if isinstance(node, dict) and '$ref' in node:
        path = node['$ref']
        siblings = {key: value for key, value in node.items() if key != '$ref'}
        if path in resolving:
            return _inline_members(siblings, root, resolving)
        resolving.add(path)
        target = inline_refs(_referenced(path, root), root, resolving)
        resolving.discard(path)
        if not siblings:
            return target
        merged = dict(target) if isinstance(target, dict) else {}
        merged.update(_inline_members(siblings, root, resolving))
        return merged
    if isinstance(node, dict):
        return _inline_members(node, root, resolving)
    if isinstance(node, list):
        return [inline_refs(item, root, resolving) for item in node]
    return node


def _inline_members(node: dict, root: dict, resolving: set[str]) -> dict:
    out = {}
    for key, value in node.items():
        if key == '$defs':
            out[key] = copy.deepcopy(value)
        elif isinstance(value, (dict, list)):
            out[key] = inline_refs(value, root, resolving)
        else:
            out[key] = value
    return out


def _referenced(path: str, root: dict) -> Any:
    parts = path.split('/')
    if parts[0] != '#':
        raise ValueError('ref paths are expected to be URI fragments, meaning they should start with #.')
    target: Any = root
    for part in parts[1:]:
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif part.isdigit() and isinstance(target, list) and 0 <= int(part) < len(target):
            target = target[int(part)]
        else:
            raise KeyError(f"Reference '{path}' not found.")
    return copy.deepcopy(target)


def without_titles(node: dict, parent_key: str = '') -> dict:
    """Drops `title` keys at any dict depth (not inside lists), except a property named `title`."""
    out = {}
    for key, value in node.items():
        if key == 'title':
            if isinstance(value, dict) and parent_key == 'properties':
                out[key] = without_titles(value, key)
        elif isinstance(value, dict):
            out[key] = without_titles(value, key)
        else:
            out[key] = value
    return out


def clean_schema(schema: Any) -> None:
    """The reference's `clean_properties`, in place: null branches out, null defaults out, string by default."""
    if not isinstance(schema, dict):
        return
    if 'anyOf' in schema:
        members = [member for member in schema['anyOf'] if member.get('type') != 'null']
        if len(members) == 1:
            schema.update(members[0])
            del schema['anyOf']
        else:
            schema['anyOf'] = members
    if 'default' in schema and schema['default'] is None:
        del schema['default']
    if 'type' not in schema and 'anyOf' not in schema and 'properties' not in schema:
        schema['type'] = 'string'
    for member in schema.get('properties', {}).values():
        clean_schema(member)
    if 'items' in schema:
        clean_schema(schema['items'])
