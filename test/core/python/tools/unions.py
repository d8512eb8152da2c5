from enum import Enum, IntEnum
from typing import Literal, Optional, Union


class Size(str, Enum):
    SMALL = "s"
    LARGE = "l"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Tools:
    def optionals(self, a: Optional[str], b: Optional[int] = None, c: str | None = "x", d: Optional[list[str]] = None):
        """Optional forms."""
        return [a, b, c, d]

    def unions(self, a: Union[int, str], b: Union[int, str, None] = None, c: int | float | None = 1, d: Union[list[int], dict] = {}):
        """Unions of two or more types."""
        return [a, b, c, d]

    def literals(self, mode: Literal["a", "b"], number: Literal[1, 2, 3] = 1, mixed: Literal["x", 1] = "x", one: Literal["only"] = "only"):
        """Literal values."""
        return [mode, number, mixed, one]

    def enums(self, size: Size, level: Level = Level.LOW, maybe: Optional[Size] = None, sizes: list[Size] = []):
        """
        Enums.
        :param size: How big
        :param level: How high
        """
        return [size, level, maybe, sizes]
