"""
title: Compat config and oauth
"""
import os

from open_webui.config import CACHE_DIR, DATA_DIR, UPLOAD_DIR
from open_webui.env import SRC_LOG_LEVELS, VERSION
from open_webui.models.config import Config
from open_webui.utils.oauth import OAuthManager


class Tools:
    def paths(self) -> dict:
        """The directories plugins see."""
        return {
            "data": str(DATA_DIR),
            "upload": str(UPLOAD_DIR),
            "cache_exists": CACHE_DIR.is_dir(),
            "env_data_dir": os.environ.get("DATA_DIR"),
            "version": VERSION,
            "log_level": SRC_LOG_LEVELS["RAG"],
        }

    async def setting(self, key: str) -> dict:
        """Config.get of a key."""
        try:
            return {"value": await Config.get(key, "fallback")}
        except PermissionError as error:
            return {"refused": str(error)}

    def oauth(self) -> str:
        """Asking OAuthManager for a client fails clearly."""
        try:
            OAuthManager(None).get_client("google")
        except RuntimeError as error:
            return str(error)
        return "no error"
