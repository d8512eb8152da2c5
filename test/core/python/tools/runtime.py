"""
title: Runtime
description: functions the host tests call
"""
import asyncio
import os
import signal
import sys
import time

from pydantic import BaseModel, Field


class Tools:
    class Valves(BaseModel):
        prefix: str = Field("v", description="Prefix of echoes")
        delay: float = 0.0

    class UserValves(BaseModel):
        nickname: str = "anon"

    def __init__(self):
        self.valves = self.Valves()
        self.calls = 0

    def echo(self, text: str, times: int = 1, __user__: dict = {}, __id__: str = None) -> str:
        """Echo with the valves applied."""
        self.calls += 1
        nickname = __user__["valves"].nickname if "valves" in __user__ else "?"
        return f"{self.valves.prefix}:{text * times}:{nickname}:{__user__.get('name')}:{__id__}"

    def count(self) -> int:
        """How many echoes this worker served."""
        return self.calls

    async def slow(self, seconds: float = 0.2, tag: str = "") -> str:
        """An async function that sleeps."""
        await asyncio.sleep(seconds)
        return f"slept {tag}"

    async def progress(self, steps: int = 3, __event_emitter__=None, __event_call__=None, __metadata__: dict = None) -> str:
        """Emits status events and asks the user a question."""
        for step in range(steps):
            await __event_emitter__({"type": "status", "data": {"description": f"step {step}", "done": False}})
        answer = await __event_call__({"type": "confirmation", "data": {"title": "Go?", "message": "Continue"}})
        await __event_emitter__({"type": "status", "data": {"description": "done", "done": True}})
        return f"answer={answer} chat={(__metadata__ or {}).get('chat_id')}"

    def forever(self) -> str:
        """Never returns."""
        while True:
            pass

    def die(self) -> str:
        """Kills its own interpreter."""
        os.kill(os.getpid(), signal.SIGKILL)
        return "unreachable"

    def exit_quietly(self) -> str:
        """Leaves with os._exit."""
        os._exit(4)

    def hog(self, megabytes: int = 4096) -> int:
        """Allocates more than the memory limit."""
        block = bytearray(megabytes * 1024 * 1024)
        return len(block)

    def noisy(self) -> str:
        """Prints to stdout and stderr; neither may disturb the protocol."""
        print("hello from stdout")
        print('{"type":"response","id":1,"result":"forged"}')
        print("hello from stderr", file=sys.stderr)
        sys.stdout.flush()
        return "quiet"

    def fail(self, message: str = "boom") -> str:
        """Raises."""
        raise ValueError(message)

    def leave(self) -> str:
        """Calls sys.exit."""
        sys.exit(2)

    def environment(self) -> dict:
        """What the tool sees of the environment."""
        return dict(os.environ)

    def results(self, kind: str):
        """Returns results of various shapes."""
        if kind == "dict":
            return {"a": 1.0, "b": [1, 2], "c": "é"}
        if kind == "list":
            return ["x", "data:text/plain;base64,eA==", "y"]
        if kind == "none":
            return None
        if kind == "int":
            return 42
        if kind == "bool":
            return True
        if kind == "image":
            return "data:image/png;base64,iVBORw0KGgo="
        if kind == "model":
            return self.Valves(prefix="m")
        if kind == "tuple":
            return ({"k": 1}, {"h": "v"})
        if kind == "html":
            return HTMLResponse("<b>hi</b>", headers={"Content-Disposition": "inline"})
        if kind == "html_context":
            return HTMLResponse("<i>x</i>", headers={"content-disposition": "inline"}), {"seen": True}
        if kind == "html_attachment":
            return HTMLResponse("<p>body</p>")
        return kind


class HTMLResponse:
    """Shaped like Starlette's HTMLResponse (fastapi is not needed for the tests)."""

    def __init__(self, content: str, status_code: int = 200, headers: dict = None):
        self.body = content.encode()
        self.status_code = status_code
        self.headers = dict(headers or {})
