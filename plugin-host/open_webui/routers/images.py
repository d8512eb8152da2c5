"""`open_webui.routers.images`: `get_image_data` and `upload_image`, which image tools call.

`upload_image` stores the image for the calling user and answers
`(file, "/api/v1/files/{id}/content")`, the URL Parley serves it at.
`get_image_data` decodes a data URL or base64 text, or fetches an http(s) URL;
as the reference's URL validation does, addresses that are not public
(loopback, private networks, link-local) are refused. Failures give
`(None, None)`.
"""
from __future__ import annotations

import base64
import io
import logging
import mimetypes
from typing import Any

from parley_host.bridge import compat, offload

from open_webui.routers.files import store_upload

log = logging.getLogger(__name__)


def _check_public(url: str) -> None:
    import ipaddress
    import socket
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname
    if not host:
        raise ValueError('Invalid URL')
    for info in socket.getaddrinfo(host, None):
        address = ipaddress.ip_address(info[4][0].split('%')[0])
        if not address.is_global:
            raise ValueError(f'URL {url} resolves to a non-public address')


def _fetch_image(url: str, headers: dict | None) -> tuple[bytes | None, str | None]:
    import urllib.request  # only when a URL is fetched: it is slow to import

    class PublicRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, hdrs: Any, newurl: str) -> Any:
            _check_public(newurl)
            return super().redirect_request(req, fp, code, msg, hdrs, newurl)

    _check_public(url)
    opener = urllib.request.build_opener(PublicRedirects)
    with opener.open(urllib.request.Request(url, headers=dict(headers or {})), timeout=30) as response:
        content_type = response.headers.get('content-type', '')
        if content_type.split('/')[0] != 'image':
            log.error('Url does not point to an image.')
            return None, None
        return response.read(), content_type


@compat
async def get_image_data(data: str, headers: dict | None = None, trusted_base_url: str | None = None) -> tuple[Any, Any]:
    try:
        if data.startswith(('http://', 'https://')):
            return await offload(_fetch_image, data, headers)
        if ',' in data:
            header, encoded = data.split(',', 1)
            mime_type = header.split(';')[0].lstrip('data:')
            return base64.b64decode(encoded), mime_type
        return base64.b64decode(data), 'image/png'
    except Exception as error:
        log.warning('Error loading image data: %s', error)
        return None, None


class _Upload:
    def __init__(self, data: bytes, filename: str, content_type: str) -> None:
        self.file = io.BytesIO(data)
        self.filename = filename
        self.content_type = content_type


@compat
async def upload_image(request: Any, image_data: bytes, content_type: str, metadata: dict, user: Any, db: Any = None) -> tuple[Any, str]:
    if image_data is None or content_type is None:
        raise ValueError('Failed to retrieve image data from the generation backend')
    extension = mimetypes.guess_extension(content_type) or ''
    upload = _Upload(image_data, f'generated-image{extension}', content_type)
    file_item = await store_upload(upload, metadata or {}, False, user)
    return file_item, f'/api/v1/files/{file_item.id}/content'
