"""`open_webui.routers.files`: `upload_file_handler`, the upload the files route makes, for plugins.

The file is stored for the calling user (`user` must be that user or None).
Parley has no document processing yet: with `process=True` the answer has the
reference's shape (`{"status": True, **file}`) but the content is not extracted.
"""
from __future__ import annotations

import base64
import json
from typing import Any

from parley_host.bridge import ParleyValueError, api, compat

from open_webui.models.files import FileModel


def user_id_of(user: Any) -> str | None:
    """The id of a UserModel, a `__user__` dict or None (the calling user)."""
    if user is None:
        return None
    if isinstance(user, dict):
        return user.get('id')
    return getattr(user, 'id', None)


async def store_upload(file: Any, metadata: dict, process: bool, user: Any) -> FileModel:
    """Sends an UploadFile-like object (`.file`, `.filename`, `.content_type`) or a file object to Parley."""
    stream = getattr(file, 'file', file)
    contents = stream.read()
    if isinstance(contents, str):
        contents = contents.encode('utf-8')
    content_type = getattr(file, 'content_type', None)
    stored = await api(
        'files.upload',
        {
            'user_id': user_id_of(user),
            'filename': getattr(file, 'filename', None) or getattr(stream, 'name', None) or 'file',
            'content_type': content_type if isinstance(content_type, str) else None,
            'content': base64.b64encode(contents).decode('ascii'),
            'metadata': metadata,
            'process': bool(process),
        },
    )
    return FileModel(**stored)


@compat
async def upload_file_handler(
    request: Any = None,
    file: Any = None,
    metadata: dict | str | None = None,
    process: bool = True,
    process_in_background: bool = True,
    user: Any = None,
    background_tasks: Any = None,
    db: Any = None,
) -> Any:
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            raise ParleyValueError(400, '[ERROR: Invalid metadata format]') from None
    file_item = await store_upload(file, metadata or {}, process, user)
    return {'status': True, **file_item.model_dump()} if process else file_item
