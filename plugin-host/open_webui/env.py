"""Process settings of the reference's `open_webui.env` that plugins read."""
from __future__ import annotations

import collections
import os
from pathlib import Path

# The worker runs in DATA_DIR and gets it in its environment (src/core/python/host.ts).
DATA_DIR = Path(os.environ.get('DATA_DIR') or os.getcwd()).resolve()

VERSION = os.environ.get('PARLEY_VERSION', '0.11.0')
WEBUI_NAME = os.environ.get('WEBUI_NAME', 'Open WebUI')
WEBUI_FAVICON_URL = 'https://openwebui.com/favicon.png'

GLOBAL_LOG_LEVEL = os.environ.get('GLOBAL_LOG_LEVEL', '').upper()
if GLOBAL_LOG_LEVEL not in ('CRITICAL', 'ERROR', 'WARNING', 'INFO', 'DEBUG', 'NOTSET'):
    GLOBAL_LOG_LEVEL = 'INFO'
# A legacy dict the reference keeps empty; older tools index it by component
# (`SRC_LOG_LEVELS["RAG"]`), which here gives the global level instead of a KeyError.
SRC_LOG_LEVELS: collections.defaultdict = collections.defaultdict(lambda: GLOBAL_LOG_LEVEL)

OFFLINE_MODE = os.environ.get('OFFLINE_MODE', 'false').lower() == 'true'
ENABLE_FORWARD_USER_INFO_HEADERS = os.environ.get('ENABLE_FORWARD_USER_INFO_HEADERS', 'False').lower() == 'true'
AIOHTTP_CLIENT_SESSION_SSL = os.environ.get('AIOHTTP_CLIENT_SESSION_SSL', 'True').lower() != 'false'
AIOHTTP_CLIENT_TIMEOUT = int(os.environ.get('AIOHTTP_CLIENT_TIMEOUT') or 300)
