"""
title: Standard environment
description: The libraries community tools import most, used for real.
"""
import datetime

import aiohttp
import httpx
import pytz
import requests
from bs4 import BeautifulSoup
from fastapi import Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field


class Tools:
    class Valves(BaseModel):
        base_url: str = Field("", description="Where to fetch from")

    def __init__(self):
        self.valves = self.Valves()

    async def fetch(self, url: str, __request__: Request = None) -> dict:
        """Fetches a page with requests, httpx and aiohttp and parses it with BeautifulSoup."""
        by_requests = await run_in_threadpool(lambda: requests.get(url, timeout=10).text)
        async with httpx.AsyncClient() as client:
            by_httpx = (await client.get(url, timeout=10)).text
        async with aiohttp.ClientSession() as session:
            async with session.get(url) as response:
                by_aiohttp = await response.text()
        title = BeautifulSoup(by_requests, "html.parser").find("title")
        return {
            "same": by_requests == by_httpx == by_aiohttp,
            "title": title.get_text() if title else None,
            "request": type(__request__).__name__,
        }

    def clock(self, zone: str = "Europe/Paris") -> str:
        """A fixed instant in a time zone, with pytz."""
        instant = datetime.datetime(2024, 7, 1, 12, 0, tzinfo=pytz.utc)
        return instant.astimezone(pytz.timezone(zone)).isoformat()

    def types(self) -> list:
        """FastAPI's names are the real ones."""
        return [UploadFile.__module__, HTMLResponse.__module__]
