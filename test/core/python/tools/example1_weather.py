"""
title: Weather Tool
author: jane
version: 0.1.0
requirements: requests, pytz
description: Gets the weather
"""

from pydantic import BaseModel, Field


class Tools:
    class Valves(BaseModel):
        api_key: str = Field("", description="API key")

    class UserValves(BaseModel):
        units: str = "metric"

    def __init__(self):
        self.valves = self.Valves()

    def get_weather(self, city: str, days: int = 1, __user__: dict = {}) -> str:
        """
        Get the weather forecast for a city.
        :param city: Name of the city
        :param days: Number of days to forecast
        :return: The forecast
        """
        units = __user__["valves"].units if "valves" in __user__ else "metric"
        return f"{city}: sunny for {days} day(s), {units}, key={self.valves.api_key or '-'}"

    async def get_time(self, __event_emitter__=None) -> str:
        """
        Return the current server time.
        """
        return "12:00"

    def _helper(self):
        return None
