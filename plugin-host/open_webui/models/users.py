"""`open_webui.models.users`: user records, as the calling user may see them.

Parley answers as the user the plugin runs for: their own record whole; any
record for an admin; for other users, what their public card shows (name,
e-mail, role, bio, status; the rest at its default, timestamps 0), as
`GET /api/v1/users/{id}/info` would. Pending users see only themselves.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from parley_host.bridge import api, compat
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_DEFAULT_PROFILE_IMAGE_URL = '/api/v1/users/{user_id}/profile/image'


class UserSettings(BaseModel):
    ui: dict | None = {}
    model_config = ConfigDict(extra='allow', defer_build=True)


class UserModel(BaseModel):
    id: str

    email: str
    username: str | None = None
    role: str = 'pending'

    name: str

    profile_image_url: str | None = None
    profile_banner_image_url: str | None = None

    bio: str | None = None
    gender: str | None = None
    date_of_birth: dt.date | None = None
    timezone: str | None = None

    presence_state: str | None = None
    status_emoji: str | None = None
    status_message: str | None = None
    status_expires_at: int | None = None

    info: dict | None = None
    variables: dict = Field(default_factory=dict, exclude=True)
    settings: UserSettings | None = None

    oauth: dict | None = None
    scim: dict | None = None
    email_verified: bool | None = False
    terms_accepted_at: int | None = None
    privacy_accepted_at: int | None = None

    last_active_at: int
    updated_at: int
    created_at: int

    model_config = ConfigDict(from_attributes=True, defer_build=True)

    @model_validator(mode='after')
    def _ensure_profile_image(self) -> UserModel:
        self.profile_image_url = self.profile_image_url or _DEFAULT_PROFILE_IMAGE_URL.format(user_id=self.id)
        return self

    @field_validator('variables', mode='before')
    @classmethod
    def normalize_variables(cls, value: Any) -> dict:
        return value if isinstance(value, dict) else {}


class UserStatusModel(UserModel):
    is_active: bool = False


class UserModelResponse(UserModel):
    model_config = ConfigDict(extra='allow', defer_build=True)


class UserNameResponse(BaseModel):
    model_config = ConfigDict(defer_build=True)

    id: str
    name: str
    role: str


class UserResponse(UserNameResponse):
    email: str


class UserIdNameResponse(BaseModel):
    model_config = ConfigDict(defer_build=True)

    id: str
    name: str


class UserInfoResponse(BaseModel):
    model_config = ConfigDict(defer_build=True)

    id: str
    name: str
    email: str
    role: str
    bio: str | None = None
    groups: list | None = []
    is_active: bool = False
    status_emoji: str | None = None
    status_message: str | None = None
    status_expires_at: int | None = None


def _user(data: Any) -> UserModel | None:
    return UserModel(**data) if data else None


class UsersTable:
    @compat
    async def get_user_by_id(self, id: str, db: Any = None) -> UserModel | None:
        return _user(await api('users.get', {'id': id}))

    @compat
    async def get_user_by_email(self, email: str, db: Any = None) -> UserModel | None:
        return _user(await api('users.get', {'email': email}))

    @compat
    async def get_users_by_user_ids(self, user_ids: list[str], db: Any = None) -> list[UserModel]:
        found = await api('users.list', {'filter': {'user_ids': list(user_ids)}})
        return [UserModel(**user) for user in found['users']]

    @compat
    async def get_users(
        self,
        filter: dict | None = None,
        skip: int | None = None,
        limit: int | None = None,
        db: Any = None,
    ) -> dict:
        found = await api('users.list', {'filter': filter or {}, 'skip': skip, 'limit': limit})
        return {'users': [UserModel(**user) for user in found['users']], 'total': found['total']}

    @compat
    async def get_num_users(self, db: Any = None) -> int | None:
        return await api('users.count', {'kind': 'all'})

    @compat
    async def has_users(self, db: Any = None) -> bool:
        return bool(await api('users.count', {'kind': 'all'}))

    @compat
    async def get_active_user_count(self, db: Any = None) -> int:
        return await api('users.count', {'kind': 'active'})

    @compat
    async def get_num_users_active_today(self, db: Any = None) -> int | None:
        return await api('users.count', {'kind': 'today'})

    @staticmethod
    def is_active(user: UserModel) -> bool:
        import time

        return bool(user.last_active_at) and user.last_active_at >= int(time.time()) - 180


Users = UsersTable()
