"""
title: Notes
author: bob
funding_url: https://example.com/fund
version: 1.2
required_open_webui_version: 0.6.0
"""

from pydantic import BaseModel, Field


class Item(BaseModel):
    title: str
    qty: int = 1


class Tools:
    class Valves(BaseModel):
        priority: int = Field(0, description="Priority level")
        max_turns: int = 8

    def __init__(self):
        self.valves = self.Valves()

    async def add_note(self, title: str, item: Item, __user__: dict, __event_emitter__=None, __id__=None):
        """
        Add a note.

        Args:
            title: ignored google style
        :param title: Note title
        :param item: The item
        """
        if __event_emitter__:
            await __event_emitter__({"type": "status", "data": {"description": f"saving {title}", "done": True}})
        return {"tool": __id__, "title": title, "item": item, "priority": self.valves.priority}

    @staticmethod
    def ping() -> str:
        """Ping."""
        return "pong"
