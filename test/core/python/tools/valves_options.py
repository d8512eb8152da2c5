from typing import List

from pydantic import BaseModel, Field


class Tools:
    class Valves(BaseModel):
        api_key: str = Field("", description="API key", json_schema_extra={"input": {"type": "password"}})
        priority: int = Field(0, description="Priority level")
        max_turns: int = 8
        level: str = Field("medium", json_schema_extra={"input": {"type": "select", "options": ["low", "medium", "high"]}})
        model: str = Field("", json_schema_extra={"input": {"options": "model_options"}})
        broken: str = Field("", json_schema_extra={"input": {"options": "not_a_method"}})
        tags: List[str] = []

        @classmethod
        def model_options(cls, __user__=None) -> list:
            name = (__user__ or {}).get("name", "nobody")
            return [{"value": "m1", "label": f"Model for {name}"}]

    class UserValves(BaseModel):
        theme: str = Field("light", json_schema_extra={"input": {"options": "themes"}})

        @classmethod
        def themes(cls, user=None):
            return ["light", "dark"] if user else ["light"]

    def __init__(self):
        self.valves = self.Valves()

    def show(self) -> dict:
        """The valves in effect."""
        return self.valves.model_dump()
