"""`open_webui.storage.provider`: the local storage provider, under DATA_DIR/uploads.

As in the reference, `upload_file` writes bytes under a file name (no record:
`Files.insert_new_file` or `upload_file_handler` makes one) and `get_file` turns
a stored path into a local path to open. Parley checks both as the calling
user: a path belongs to a file record the user may read, or to bytes this
same call uploaded.
"""
from __future__ import annotations

import base64
from typing import Any, BinaryIO

from parley_host.bridge import api, compat

EMPTY_CONTENT = 'The content provided is empty. Please ensure that there is text or data present before proceeding.'


class LocalStorageProvider:
    @staticmethod
    @compat
    async def upload_file(file: BinaryIO, filename: str, tags: dict[str, str]) -> tuple[bytes, str]:
        contents = file.read()
        if not contents:
            raise ValueError(EMPTY_CONTENT)
        stored = await api(
            'storage.upload',
            {'filename': filename, 'content': base64.b64encode(contents).decode('ascii'), 'tags': dict(tags or {})},
        )
        return contents, stored['path']

    @staticmethod
    @compat
    async def get_file(file_path: str) -> str:
        return (await api('storage.get', {'path': str(file_path)}))['path']

    @staticmethod
    @compat
    async def delete_file(file_path: str) -> None:
        await api('storage.delete', {'path': str(file_path)})


StorageProvider = LocalStorageProvider
Storage: Any = LocalStorageProvider()
