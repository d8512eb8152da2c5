"""
title: Compat completion
"""
from open_webui.models.users import Users
from open_webui.utils.chat import generate_chat_completion


class Tools:
    async def ask(self, model: str, question: str, __user__: dict, __request__=None, stream: bool = False) -> str:
        """generate_chat_completion as the calling user."""
        user = await Users.get_user_by_id(__user__["id"])
        try:
            answer = await generate_chat_completion(
                __request__, {"model": model, "messages": [{"role": "user", "content": question}], "stream": stream}, user
            )
        except Exception as error:
            return f"{type(error).__name__} {getattr(error, 'status_code', '')}: {error}"
        if stream:
            chunks = [chunk async for chunk in answer.body_iterator]
            return "".join(chunks).count("data:").__str__() + " events"
        return answer["choices"][0]["message"]["content"]

    async def ask_as(self, user_id: str, __request__=None) -> str:
        """Naming another user is refused."""
        try:
            await generate_chat_completion(__request__, {"model": "gpt-fake", "messages": []}, {"id": user_id})
        except PermissionError as error:
            return f"refused: {error}"
        return "answered"
