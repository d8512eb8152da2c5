"""What a tool returned, in the forms Node needs.

`text`, `files` and `embeds` are what the reference's `process_tool_result` makes
of a local tool's result (the text the model sees, image files, UI embeds);
they need Python's own `str()` and `json.dumps`, so they are made here.
`value` is a JSON rendering of the raw result for callers that want data.
"""
from __future__ import annotations

import json
import math
from typing import Any


def _is_html_response(value: Any) -> bool:
    # Duck-typed: fastapi may not be installed; tools import its HTMLResponse when it is.
    return any(cls.__name__ == 'HTMLResponse' for cls in type(value).__mro__) and hasattr(value, 'body')


def to_json(value: Any, depth: int = 0) -> Any:
    if depth > 100:
        return str(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(key): to_json(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(item, depth + 1) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode('utf-8', 'replace')
    if hasattr(value, 'model_dump'):
        try:
            return to_json(value.model_dump(mode='json'), depth + 1)
        except Exception:
            return str(value)
    return str(value)


def _response_form(response: Any) -> dict:
    headers = {str(k): str(v) for k, v in getattr(response, 'headers', {}).items()}
    body = response.body
    return {
        'status': int(getattr(response, 'status_code', 200)),
        'headers': headers,
        'body': body.decode('utf-8', 'replace') if isinstance(body, (bytes, bytearray)) else str(body),
    }


def render_result(function_name: str, result: Any) -> dict:
    embeds: list[str] = []
    files: list[dict] = []
    response = None

    context = None
    if isinstance(result, tuple) and len(result) == 2 and _is_html_response(result[0]):
        result, context = result
    if _is_html_response(result):
        response = _response_form(result)
        if 'inline' in _header(response['headers'], 'Content-Disposition'):
            embeds.append(response['body'])
            status = response['status']
            if 200 <= status < 300:
                if context is not None and isinstance(context, (str, dict, list)):
                    result = context
                else:
                    result = _ui_status('success', f'{function_name}: Embedded UI result is active and visible to the user.')
            elif 400 <= status < 500:
                result = _ui_status('error', f'{function_name}: Client error {status} from embedded UI result.')
            elif 500 <= status < 600:
                result = _ui_status('error', f'{function_name}: Server error {status} from embedded UI result.')
            else:
                result = _ui_status('error', f'{function_name}: Unexpected status code {status} from embedded UI result.')
        else:
            result = response['body']
    elif _inline_headers(result):
        result = _inline_embed(function_name, result, embeds)

    if isinstance(result, str) and result.startswith('data:image/'):
        files.append({'type': 'image', 'url': result})
        result = f'{function_name}: Image file read successfully.'

    if isinstance(result, list):
        # Removing while iterating skips the item after each removal: the reference does the same.
        for item in result:
            if isinstance(item, str) and item.startswith('data:'):
                files.append({'type': 'data', 'content': item})
                result.remove(item)
        result = {'results': result}

    if isinstance(result, (dict, list)):
        text = json.dumps(result, indent=2, ensure_ascii=False, default=str)
    elif result is None or isinstance(result, str):
        text = result
    elif isinstance(result, tuple):
        text = json.dumps(result[0], indent=2, ensure_ascii=False, default=str) if result else ''
    else:
        text = str(result)
    return {'text': text, 'files': files, 'embeds': embeds, 'response': response}


def _inline_headers(result: Any) -> bool:
    """`(content, headers)` whose headers say `Content-Disposition: inline`.

    The reference renders such a pair as an embed for actions and external tools
    (`process_tool_result`); Parley does for local tools too, so HTML text can be
    an embed without FastAPI's HTMLResponse. Other pairs are left as they are.
    """
    if not (isinstance(result, tuple) and len(result) == 2 and hasattr(result[1], 'items')):
        return False
    try:
        headers = {str(k): str(v) for k, v in result[1].items()}
    except Exception:
        return False
    return 'inline' in _header(headers, 'Content-Disposition')


def _inline_embed(function_name: str, result: tuple, embeds: list) -> Any:
    content, raw_headers = result
    headers = {str(k): str(v) for k, v in raw_headers.items()}
    context = None
    if isinstance(content, (tuple, list)) and len(content) == 2:
        content, context = content
    if 'text/html' in _header(headers, 'Content-Type'):
        embeds.append(content.decode('utf-8', 'replace') if isinstance(content, (bytes, bytearray)) else content)
    elif _header(headers, 'Location'):
        embeds.append(_header(headers, 'Location'))
    else:
        return result
    if context is not None and isinstance(context, (str, dict, list)):
        return context
    return _ui_status('success', f'{function_name}: Embedded UI result is active and visible to the user.')


def _header(headers: dict, name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return ''


def _ui_status(status: str, message: str) -> dict:
    return {'status': status, 'code': 'ui_component', 'message': message}
