"""
title: Compat chats
"""
from open_webui.models.chats import ChatModel, Chats


class Tools:
    async def read(self, chat_id: str) -> str:
        """A chat's title, or none."""
        chat = await Chats.get_chat_by_id(chat_id)
        if chat is None:
            return "none"
        assert isinstance(chat, ChatModel)
        return f"{chat.title} by {chat.user_id}"

    def read_sync(self, chat_id: str) -> str:
        """The same, synchronously."""
        chat = Chats.get_chat_by_id(chat_id)
        return "none" if chat is None else chat.title

    async def retitle(self, chat_id: str, title: str) -> str:
        """update_chat_by_id with the stored chat and a new title."""
        chat = await Chats.get_chat_by_id(chat_id)
        if chat is None:
            return "none"
        body = chat.chat
        body["title"] = title
        updated = await Chats.update_chat_by_id(chat_id, body)
        return "refused" if updated is None else updated.title

    async def attach(self, chat_id: str, message_id: str, name: str) -> str:
        """Adds a file to a message."""
        files = await Chats.add_message_files_by_id_and_message_id(chat_id, message_id, [{"type": "file", "name": name}])
        return "none" if files is None else ",".join(f["name"] for f in files)
