"""
title: Compat users
description: Uses open_webui.models.users awaited, plainly, and from threads.
"""
import asyncio

from fastapi.concurrency import run_in_threadpool
from open_webui.models.users import UserModel, Users


class Tools:
    async def me_awaited(self, __user__: dict) -> dict:
        """The caller's record, awaited as in 0.10.2."""
        user = await Users.get_user_by_id(__user__["id"])
        return {"type": type(user).__name__, "is_model": isinstance(user, UserModel), "id": user.id, "email": user.email, "role": user.role}

    async def me_plain(self, __user__: dict) -> dict:
        """The caller's record, called the pre-async way inside an async function."""
        user = Users.get_user_by_id(__user__["id"])
        return {"type": type(user).__name__, "id": user.id}

    def me_sync(self, __user__: dict) -> str:
        """From a sync function."""
        return Users.get_user_by_id(__user__["id"]).name

    async def me_threads(self, __user__: dict) -> list:
        """From threads the call started."""
        first = await asyncio.to_thread(Users.get_user_by_id, __user__["id"])
        second = await run_in_threadpool(Users.get_user_by_id, __user__["id"])
        return [first.id, second.id]

    async def other(self, user_id: str) -> dict:
        """Another user, as the caller may see them."""
        user = await Users.get_user_by_id(user_id)
        if user is None:
            return {"found": False}
        return {"found": True, "name": user.name, "email": user.email, "settings": user.settings is not None, "created_at": user.created_at}

    async def listing(self, query: str = "", roles: list = None, limit: int = None) -> dict:
        """get_users with a filter."""
        flt = {}
        if query:
            flt["query"] = query
        if roles:
            flt["roles"] = roles
        found = await Users.get_users(filter=flt, limit=limit)
        return {"total": found["total"], "names": sorted(u.name for u in found["users"])}

    async def counts(self) -> list:
        """User counts."""
        return [await Users.get_num_users(), Users.has_users(), await Users.get_active_user_count(), await Users.get_num_users_active_today()]
