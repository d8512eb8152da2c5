"""`open_webui.utils.chat`: `generate_chat_completion`, a model call through Parley, as the calling user.

The completion is made by Parley's model layer for the user the plugin runs
for (`user` must be that user), with the same model access check as
`POST /api/chat/completions`. `bypass_filter` cannot lift that check here: the
user's own permissions apply. The answer is the OpenAI-style JSON; a request
with `"stream": true` gets a StreamingResponse whose body yields the provider's
event stream (read in full by Parley first). Provider errors raise with their
status and detail, as the reference's HTTPException does.

Parley's chat pipeline (filters, pipes, tools in the loop) is not built yet;
when it is, this call will go through it.
"""
from __future__ import annotations

from typing import Any

from parley_host.bridge import api, compat

from open_webui.routers.files import user_id_of


def _streaming_response(text: str) -> Any:
    from starlette.responses import StreamingResponse  # only for stream requests: slow to import

    async def events() -> Any:
        for line in text.splitlines(keepends=True):
            yield line

    return StreamingResponse(events(), media_type='text/event-stream')


@compat
async def generate_chat_completion(
    request: Any,
    form_data: dict,
    user: Any = None,
    bypass_filter: bool = False,
    bypass_system_prompt: bool = False,
) -> Any:
    answer = await api(
        'chat.completion',
        {'user_id': user_id_of(user), 'form_data': dict(form_data), 'bypass_system_prompt': bool(bypass_system_prompt)},
    )
    if 'stream' in answer:
        return _streaming_response(answer['stream'])
    return answer['body']


chat_completion = generate_chat_completion
