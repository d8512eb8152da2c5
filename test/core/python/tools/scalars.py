"""
title: Scalars
version: 1
"""
import datetime
from typing import Any


class Tools:
    def plain(self, text: str, count: int, ratio: float, flag: bool, blob: bytes, day: datetime.date):
        """Every scalar type without defaults."""
        return [text, count, ratio, flag, len(blob), str(day)]

    def defaults(self, text: str = "hi", count: int = 3, ratio: float = 0.5, flag: bool = True, nothing: str = None):
        """
        Scalars with defaults.
        :param text: Some text
        :param nothing: Defaults to None, so no default is shown
        """
        return [text, count, ratio, flag, nothing]

    def loose(self, anything: Any, unannotated, with_default=7, moment: datetime.datetime = None):
        """Any, no annotation, a default without annotation, a datetime."""
        return [anything, unannotated, with_default, str(moment)]

    def coerce(self, number: int, maybe: "int | None" = None, label: str = "", optional_label: "str | None" = None, ratio: float = 0.0):
        """Arguments the host coerces before the call."""
        return {"number": number, "maybe": maybe, "label": label, "optional_label": optional_label, "ratio": ratio}
