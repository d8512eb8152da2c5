from enum import Enum
from typing import List, Literal, Optional


class Color(str, Enum):
    RED = "red"
    BLUE = "blue"


class Tools:
    def search(
        self,
        query: str,
        limit: Optional[int] = None,
        mode: Literal["fast", "exact"] = "fast",
        tags: List[str] = [],
        weights: list[float] = None,
        options: dict = {},
        strict: bool = False,
        color: Color = Color.RED,
        anything=None,
        _private: int = 0,
        __metadata__: dict = None,
    ):
        """
        Search the index.

        Multi-line description continues here.
        :param query: The search query
        :param limit: Max results
        :param mode: Search mode
        :param __metadata__: Request metadata
        :return: Matching documents
        """
        return {"query": query, "limit": limit, "mode": mode, "color": color.value}

    def no_doc(self, x: int, y: float | None, z: str | int = "a"):
        return [x, y, z]
