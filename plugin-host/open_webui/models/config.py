"""`open_webui.models.config`: the persistent config, read by dotted key (`Config.get('webui.url')`).

Admins may read any key. Other users may read keys outside the credential
namespaces (`oauth.`, `ldap.`, provider connections, ...) whose names do not
look secret, and secret-looking keys inside values are dropped; a refused key
raises PermissionError naming it.
"""
from __future__ import annotations

from typing import Any

from parley_host.bridge import api, compat


class Config:
    @staticmethod
    @compat
    async def get(key: str, default: Any = None) -> Any:
        found = await api('config.get', {'key': key})
        return found['value'] if found['found'] else default

    @staticmethod
    @compat
    async def get_many(*keys: str) -> dict:
        values = {}
        for key in keys:
            found = await api('config.get', {'key': key})
            if found['found']:
                values[key] = found['value']
        return values
