import dataclasses
import decimal
import uuid
from typing import Annotated, Optional

from typing_extensions import TypedDict

from pydantic import BaseModel, Field, conint


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Options(TypedDict):
    depth: int
    name: str


class Filter(BaseModel):
    """Filters to apply."""

    field: str = Field(..., min_length=1)
    value: Optional[str] = None


class Tools:
    def constrained(
        self,
        page: conint(ge=1, le=100) = 1,
        size: Annotated[int, Field(ge=1, description="Page size")] = 10,
        ratio: float = Field(0.5, ge=0, le=1, description="A ratio"),
    ):
        """
        Constraints end up in the spec.
        :param ratio: Overridden by the docstring
        """
        return page

    def others(self, ident: uuid.UUID, amount: decimal.Decimal, frozen: frozenset = frozenset(), point: Point = None, options: Options = None):
        """UUID, Decimal, frozenset, dataclass and TypedDict."""
        return str(ident)

    def filtered(self, filters: list[Filter], main: Optional[Filter] = None, by_name: dict[str, Filter] = None):
        """
        Model in a list, optional model, model in a dict.
        :param main: The main filter
        """
        return len(filters)
