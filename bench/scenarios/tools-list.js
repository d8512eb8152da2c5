/** A typical tool: frontmatter, admin and user valves, three documented functions. */
function toolSource(i) {
  return `"""
title: Bench Tool ${i}
author: bench
version: 1.0.${i}
description: A typical tool for the list benchmark
"""
from typing import Literal, Optional

from pydantic import BaseModel, Field


class Tools:
    class Valves(BaseModel):
        api_key: str = Field("", description="API key")
        max_results: int = Field(5, description="How many results to return")

    class UserValves(BaseModel):
        units: Literal["metric", "imperial"] = "metric"

    def __init__(self):
        self.valves = self.Valves()

    def get_weather(self, city: str, days: int = 1, __user__: dict = {}) -> str:
        """
        Get the weather forecast for a city.
        :param city: Name of the city
        :param days: Number of days to forecast
        """
        return f"{city}: sunny for {days} day(s)"

    async def search(self, query: str, limit: Optional[int] = None, mode: Literal["fast", "exact"] = "fast") -> list:
        """
        Search the index.
        :param query: The search query
        :param limit: Max results
        :param mode: Search mode
        """
        return [query] * (limit or self.valves.max_results)

    def convert(self, value: float, unit: str = "celsius") -> float:
        """Convert a temperature to the other scale."""
        return value * 9 / 5 + 32 if unit == "celsius" else (value - 32) * 5 / 9
`;
}

/** The tool list the web frontend loads with every page (frontend-contract.md §1 step 8), with 100 tools stored. */
export default {
  name: 'GET /api/v1/tools/ (100 tools)',
  async setup(ctx) {
    const { token } = await ctx.admin();
    await ctx.repeat(
      100,
      (i) => ctx.post('/api/v1/tools/create', { id: `bench_tool_${i}`, name: `Bench tool ${i}`, content: toolSource(i), meta: { description: `Tool ${i}` } }, { token }),
      { concurrency: 4 },
    );
    return { method: 'GET', path: '/api/v1/tools/', headers: { authorization: `Bearer ${token}` } };
  },
};
