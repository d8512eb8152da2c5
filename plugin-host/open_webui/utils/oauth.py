"""`open_webui.utils.oauth`: OAuthManager, importable so tools that reference it load.

Parley does not hand its OAuth clients to plugins: asking for one raises a
clear error. A tool that needs the user's OAuth access token should declare
`__oauth_token__`, which the host passes to tool functions.
"""
from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

UNAVAILABLE = (
    'OAuth clients are not available to plugins in Parley; declare a __oauth_token__ '
    "parameter to receive the calling user's OAuth token instead"
)


class OAuthManager:
    def __init__(self, app: Any = None) -> None:
        self.app = app

    def get_client(self, provider_name: str) -> Any:
        raise RuntimeError(f'{UNAVAILABLE} (asked for client {provider_name!r})')

    def get_server_metadata_url(self, provider_name: str) -> str | None:
        return None

    async def get_oauth_token(self, user_id: str, session_id: str, force_refresh: bool = False) -> dict | None:
        log.warning('OAuthManager.get_oauth_token: %s', UNAVAILABLE)
        return None


class OAuthClientManager(OAuthManager):
    """The reference's manager of MCP tool-server OAuth clients: none exist here either."""

    async def get_client(self, client_id: str) -> Any:  # type: ignore[override]
        raise RuntimeError(f'{UNAVAILABLE} (asked for client {client_id!r})')
