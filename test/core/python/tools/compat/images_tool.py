"""
title: Compat images
"""
import base64

from open_webui.models.users import Users
from open_webui.routers.images import get_image_data, upload_image

PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


class Tools:
    async def store_image(self, __user__: dict, __request__=None, __metadata__: dict = None) -> dict:
        """Decodes a data URL and uploads it as a generated image."""
        data, content_type = await get_image_data(f"data:image/png;base64,{PIXEL}")
        user = await Users.get_user_by_id(__user__["id"])
        item, url = await upload_image(__request__, data, content_type, {"chat_id": "c1", "message_id": "m1"}, user)
        return {"url": url, "name": item.filename, "type": item.meta["content_type"], "size": len(data)}

    async def local_url(self, url: str) -> list:
        """A URL on a non-public address is refused: (None, None)."""
        data, content_type = await get_image_data(url)
        return [data, content_type]
