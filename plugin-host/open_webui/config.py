"""Constants of the reference's `open_webui.config` that plugins read.

`UPLOAD_DIR` is where Parley keeps uploaded files (the files area writes there
too); `CACHE_DIR` is scratch space tools may use. Both exist once imported, as
in the reference.
"""
from __future__ import annotations

import os

from open_webui.env import DATA_DIR, VERSION, WEBUI_FAVICON_URL, WEBUI_NAME

UPLOAD_DIR = DATA_DIR / 'uploads'
UPLOAD_DIR.mkdir(parents=True, exist_ok=True)

CACHE_DIR = DATA_DIR / 'cache'
CACHE_DIR.mkdir(parents=True, exist_ok=True)

WEBUI_URL = os.environ.get('WEBUI_URL', '')

__all__ = ['CACHE_DIR', 'DATA_DIR', 'UPLOAD_DIR', 'VERSION', 'WEBUI_FAVICON_URL', 'WEBUI_NAME', 'WEBUI_URL']
