"""
title: Compat call lifetime
"""
import asyncio

from open_webui.models.users import Users

OUTCOME = {}


class Tools:
    async def leak(self, __user__: dict) -> str:
        """Starts a task that calls Parley after this call has ended."""

        async def later():
            await asyncio.sleep(0.3)
            try:
                await Users.get_user_by_id(__user__["id"])
                OUTCOME["result"] = "answered"
            except Exception as error:
                OUTCOME["result"] = f"{type(error).__name__}: {error}"

        OUTCOME.clear()
        asyncio.ensure_future(later())
        return "started"

    async def outcome(self) -> str:
        """What the leaked task got."""
        for _ in range(50):
            if "result" in OUTCOME:
                break
            await asyncio.sleep(0.05)
        return OUTCOME.get("result", "nothing yet")
