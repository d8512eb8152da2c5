"""`open_webui.models.chats`: chats, as the calling user may read and change them.

Reading follows `GET /api/v1/chats/{id}`: the user's own chats, chats shared
with them, any chat for admins while admin chat access is on. Another user's
chat reads as None, as a missing one does. Changes need ownership, as
`POST /api/v1/chats/{id}` does; `update_chat_by_id` merges the sent chat over
the stored one (a sent history message by message), as that route does.
"""
from __future__ import annotations

from typing import Any

from parley_host.bridge import api, compat
from pydantic import BaseModel, ConfigDict, field_validator


class ChatModel(BaseModel):
    model_config = ConfigDict(from_attributes=True, defer_build=True)

    id: str
    user_id: str
    title: str
    chat: dict

    created_at: int
    updated_at: int

    share_id: str | None = None
    archived: bool = False
    pinned: bool | None = False

    meta: dict = {}
    variables: dict = {}
    folder_id: str | None = None

    tasks: list | None = None
    summary: str | None = None
    current_message_id: str | None = None

    last_read_at: int | None = None

    @field_validator('variables', mode='before')
    @classmethod
    def normalize_variables(cls, value: Any) -> dict:
        return value if isinstance(value, dict) else {}


class ChatForm(BaseModel):
    model_config = ConfigDict(defer_build=True)

    chat: dict
    folder_id: str | None = None
    variables: dict | None = None


class ChatResponse(ChatModel):
    context_usage: dict | None = None


def _chat(data: Any) -> ChatModel | None:
    return ChatModel(**data) if data else None


class ChatTable:
    @compat
    async def get_chat_by_id(self, id: str, db: Any = None) -> ChatModel | None:
        return _chat(await api('chats.get', {'id': id}))

    @compat
    async def get_chat_by_id_and_user_id(self, id: str, user_id: str, db: Any = None) -> ChatModel | None:
        chat = _chat(await api('chats.get', {'id': id}))
        return chat if chat is not None and chat.user_id == user_id else None

    @compat
    async def get_message_by_id_and_message_id(self, id: str, message_id: str) -> dict | None:
        chat = _chat(await api('chats.get', {'id': id}))
        if chat is None:
            return None
        return chat.chat.get('history', {}).get('messages', {}).get(message_id, {})

    @compat
    async def update_chat_by_id(self, id: str, chat: dict, db: Any = None, *, touch: bool = True) -> ChatModel | None:
        return _chat(await api('chats.update', {'id': id, 'chat': chat}))

    @compat
    async def upsert_message_to_chat_by_id_and_message_id(self, id: str, message_id: str, message: dict) -> ChatModel | None:
        return _chat(await api('chats.upsert_message', {'id': id, 'message_id': message_id, 'message': message}))

    @compat
    async def add_message_files_by_id_and_message_id(self, id: str, message_id: str, files: list[dict]) -> list[dict] | None:
        return await api('chats.add_message_files', {'id': id, 'message_id': message_id, 'files': list(files)})


Chats = ChatTable()
