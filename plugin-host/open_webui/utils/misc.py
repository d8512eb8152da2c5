"""`open_webui.utils.misc`: the message helpers filters and pipes import most.

Pure functions over OpenAI-style message lists (content as a string or a list
of parts), with the reference's names and behaviour; nothing here calls Parley.
"""
from __future__ import annotations

import time
import uuid
from typing import Any


def get_content_from_message(message: dict) -> str | None:
    content = message.get('content')
    if not isinstance(content, list):
        return content
    return next((part['text'] for part in content if part.get('type') == 'text'), None)


def get_messages_content(messages: list[dict]) -> str:
    return '\n'.join(f'{m["role"].upper()}: {get_content_from_message(m)}' for m in messages)


def _last(messages: list[dict], role: str) -> dict | None:
    return next((m for m in reversed(messages) if m.get('role') == role), None)


def get_last_user_message_item(messages: list[dict]) -> dict | None:
    return _last(messages, 'user')


def get_last_user_message(messages: list[dict]) -> str | None:
    message = _last(messages, 'user')
    return None if message is None else get_content_from_message(message)


def set_last_user_message_content(content: str, messages: list[dict]) -> list[dict]:
    message = _last(messages, 'user')
    if message is not None:
        parts = message.get('content')
        text_part = next((p for p in parts if p.get('type') == 'text'), None) if isinstance(parts, list) else None
        if isinstance(parts, list):
            if text_part is not None:
                text_part['text'] = content
        else:
            message['content'] = content
    return messages


def get_last_assistant_message_item(messages: list[dict]) -> dict | None:
    return _last(messages, 'assistant')


def get_last_assistant_message(messages: list[dict]) -> str | None:
    message = _last(messages, 'assistant')
    return None if message is None else get_content_from_message(message)


def get_system_message(messages: list[dict]) -> dict | None:
    return next((m for m in messages if m.get('role') == 'system'), None)


def remove_system_message(messages: list[dict]) -> list[dict]:
    return [m for m in messages if m.get('role') != 'system']


def pop_system_message(messages: list[dict]) -> tuple[dict | None, list[dict]]:
    return get_system_message(messages), remove_system_message(messages)


def update_message_content(message: dict, content: str, append: bool = True) -> dict:
    join = (lambda old: f'{old}\n{content}') if append else (lambda old: f'{content}\n{old}')
    if isinstance(message.get('content'), list):
        for part in message['content']:
            if part.get('type') == 'text':
                part['text'] = join(part['text'])
    else:
        message['content'] = join(message.get('content'))
    return message


def replace_system_message_content(content: str, messages: list[dict]) -> list[dict]:
    message = get_system_message(messages)
    if message is not None:
        message['content'] = content
    return messages


def add_or_update_system_message(content: str, messages: list[dict], append: bool = False) -> list[dict]:
    if messages and messages[0].get('role') == 'system':
        update_message_content(messages[0], content, append)
    else:
        messages.insert(0, {'role': 'system', 'content': content})
    return messages


def add_or_update_user_message(content: str, messages: list[dict], append: bool = True) -> list[dict]:
    if messages and messages[-1].get('role') == 'user':
        update_message_content(messages[-1], content, append)
    else:
        messages.append({'role': 'user', 'content': content})
    return messages


def prepend_to_first_user_message_content(content: str, messages: list[dict]) -> list[dict]:
    message = next((m for m in messages if m.get('role') == 'user'), None)
    if message is not None:
        update_message_content(message, content, append=False)
    return messages


def append_or_update_assistant_message(content: str, messages: list[dict]) -> list[dict]:
    if messages and messages[-1].get('role') == 'assistant':
        messages[-1]['content'] = f'{messages[-1]["content"]}\n{content}'
    else:
        messages.append({'role': 'assistant', 'content': content})
    return messages


def openai_chat_message_template(model: str) -> dict:
    return {
        'id': f'{model}-{uuid.uuid4()}',
        'created': int(time.time()),
        'model': model,
        'choices': [{'index': 0, 'logprobs': None, 'finish_reason': None}],
    }


def openai_chat_chunk_message_template(
    model: str,
    content: str | None = None,
    reasoning_content: str | None = None,
    tool_calls: list | None = None,
    usage: dict | None = None,
) -> dict:
    """A stream chunk; one with nothing in it ends the answer (`finish_reason: stop`)."""
    template = openai_chat_message_template(model)
    template['object'] = 'chat.completion.chunk'
    delta: dict[str, Any] = {}
    if content:
        delta['content'] = content
    if reasoning_content:
        delta['reasoning_content'] = reasoning_content
    if tool_calls:
        delta['tool_calls'] = tool_calls
    template['choices'][0]['delta'] = delta
    if not delta:
        template['choices'][0]['finish_reason'] = 'stop'
    if usage:
        template['usage'] = usage
    return template


def openai_chat_completion_message_template(
    model: str,
    message: str | None = None,
    reasoning_content: str | None = None,
    tool_calls: list | None = None,
    usage: dict | None = None,
) -> dict:
    template = openai_chat_message_template(model)
    template['object'] = 'chat.completion'
    if message is not None:
        body: dict[str, Any] = {'role': 'assistant', 'content': message}
        if reasoning_content:
            body['reasoning_content'] = reasoning_content
        if tool_calls:
            body['tool_calls'] = tool_calls
        template['choices'][0]['message'] = body
    template['choices'][0]['finish_reason'] = 'tool_calls' if tool_calls else 'stop'
    if usage:
        template['usage'] = usage
    return template
