"""`open_webui.models.files`: file records, as the calling user may see and change them.

A file is visible to its owner, to admins and to holders of a read grant on it;
changing one takes ownership (or admin). `insert_new_file` stores a record for
the calling user only: another user id is refused.
"""
from __future__ import annotations

from typing import Any

from parley_host.bridge import api, compat
from pydantic import BaseModel, ConfigDict, model_validator


class FileModel(BaseModel):
    model_config = ConfigDict(from_attributes=True, defer_build=True)

    id: str
    user_id: str
    hash: str | None = None

    filename: str
    path: str | None = None

    data: dict | None = None
    meta: dict | None = None

    created_at: int | None
    updated_at: int | None


class FileMeta(BaseModel):
    name: str | None = None
    content_type: str | None = None
    size: int | None = None

    model_config = ConfigDict(extra='allow', defer_build=True)

    @model_validator(mode='before')
    @classmethod
    def sanitize_meta(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        content_type = data.get('content_type')
        if isinstance(content_type, list):
            data['content_type'] = next((item for item in content_type if isinstance(item, str)), None)
        elif content_type is not None and not isinstance(content_type, str):
            data['content_type'] = None
        return data


class FileModelResponse(BaseModel):
    id: str
    user_id: str
    hash: str | None = None

    filename: str
    data: dict | None = None
    meta: FileMeta | None = None

    created_at: int
    updated_at: int | None = None

    model_config = ConfigDict(extra='allow', defer_build=True)


class FileForm(BaseModel):
    model_config = ConfigDict(defer_build=True)

    id: str
    hash: str | None = None
    filename: str
    path: str
    data: dict = {}
    meta: dict = {}


class FileUpdateForm(BaseModel):
    model_config = ConfigDict(defer_build=True)

    hash: str | None = None
    data: dict | None = None
    meta: dict | None = None


def _file(data: Any) -> FileModel | None:
    return FileModel(**data) if data else None


class FilesTable:
    @compat
    async def insert_new_file(self, user_id: str, form_data: FileForm, db: Any = None) -> FileModel | None:
        form = form_data.model_dump() if isinstance(form_data, BaseModel) else dict(form_data)
        return _file(await api('files.insert', {'user_id': user_id, 'form': form}))

    @compat
    async def get_file_by_id(self, id: str, db: Any = None) -> FileModel | None:
        return _file(await api('files.get', {'id': id}))

    @compat
    async def get_file_by_id_and_user_id(self, id: str, user_id: str, db: Any = None) -> FileModel | None:
        file = _file(await api('files.get', {'id': id}))
        return file if file is not None and file.user_id == user_id else None

    @compat
    async def get_files_by_ids(self, ids: list[str], db: Any = None) -> list[FileModel]:
        return [FileModel(**file) for file in await api('files.get_many', {'ids': list(ids)})]

    @compat
    async def update_file_data_by_id(self, id: str, data: dict, db: Any = None) -> FileModel | None:
        return _file(await api('files.update', {'id': id, 'data': data}))

    @compat
    async def update_file_metadata_by_id(self, id: str, meta: dict, db: Any = None) -> FileModel | None:
        return _file(await api('files.update', {'id': id, 'meta': meta}))

    @compat
    async def update_file_by_id(self, id: str, form_data: FileUpdateForm, db: Any = None) -> FileModel | None:
        form = form_data.model_dump() if isinstance(form_data, BaseModel) else dict(form_data)
        return _file(await api('files.update', {'id': id, **{k: v for k, v in form.items() if v is not None}}))


Files = FilesTable()
