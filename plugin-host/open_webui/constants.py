"""`open_webui.constants`: the task names filters and pipes compare `__task__` with.

`TASKS.TITLE_GENERATION == 'title_generation'` (a str Enum, as the reference's),
so `if __task__ == TASKS.TITLE_GENERATION` works with the plain string Parley passes.
"""
from __future__ import annotations

from enum import Enum


class TASKS(str, Enum):
    def __str__(self) -> str:
        return str(self.value)

    TITLE_GENERATION = 'title_generation'
    FOLLOW_UP_GENERATION = 'follow_up_generation'
    TAGS_GENERATION = 'tags_generation'
    EMOJI_GENERATION = 'emoji_generation'
    QUERY_GENERATION = 'query_generation'
    IMAGE_PROMPT_GENERATION = 'image_prompt_generation'
    AUTOCOMPLETE_GENERATION = 'autocomplete_generation'
    FUNCTION_CALLING = 'function_calling'
    MOA_RESPONSE_GENERATION = 'moa_response_generation'
