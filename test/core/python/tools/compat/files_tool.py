"""
title: Compat files
"""
import io
import uuid

from fastapi import UploadFile
from open_webui.config import UPLOAD_DIR
from open_webui.models.files import FileForm, FileModel, Files
from open_webui.models.users import Users
from open_webui.routers.files import upload_file_handler
from open_webui.storage.provider import Storage


class Tools:
    async def store(self, text: str, __user__: dict) -> dict:
        """Storage.upload_file, then a record, then read back through Storage.get_file."""
        file_id = str(uuid.uuid4())
        contents, path = Storage.upload_file(io.BytesIO(text.encode()), f"{file_id}_note.txt", {"OpenWebUI-User-Id": __user__["id"]})
        item = await Files.insert_new_file(
            __user__["id"],
            FileForm(id=file_id, filename="note.txt", path=path, meta={"name": "note.txt", "content_type": "text/plain", "size": len(contents)}),
        )
        again = await Files.get_file_by_id(file_id)
        with open(Storage.get_file(again.path), "rb") as handle:
            read = handle.read().decode()
        return {"id": item.id, "model": isinstance(item, FileModel), "owner": item.user_id, "read": read, "in_upload_dir": path.startswith(str(UPLOAD_DIR))}

    async def upload(self, text: str, __user__: dict, __request__=None) -> dict:
        """upload_file_handler with an UploadFile, as image and export tools do."""
        user = await Users.get_user_by_id(__user__["id"])
        file = UploadFile(file=io.BytesIO(text.encode()), filename="report.html", headers={"content-type": "text/html"})
        item = await upload_file_handler(__request__, file=file, metadata={"chat_id": "c1"}, process=False, user=user)
        processed = await upload_file_handler(__request__, file=UploadFile(file=io.BytesIO(b"x"), filename="x.txt"), user=user)
        return {"id": item.id, "name": item.meta["name"], "type": item.meta["content_type"], "size": item.meta["size"], "data": item.meta["data"], "processed": processed["status"]}

    async def get(self, file_id: str) -> str:
        """A file's name, or none."""
        item = await Files.get_file_by_id(file_id)
        return "none" if item is None else item.filename

    async def insert_for(self, user_id: str) -> str:
        """insert_new_file naming another user."""
        await Files.insert_new_file(user_id, FileForm(id=str(uuid.uuid4()), filename="x", path=str(UPLOAD_DIR / "x")))
        return "inserted"

    async def read_path(self, path: str) -> str:
        """Storage.get_file of a path."""
        return await Storage.get_file(path)
