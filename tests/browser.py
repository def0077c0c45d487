"""A tiny headless-Chromium driver over the DevTools protocol (websockets), for the web tests.

``Browser().open(url)`` loads a page; ``text(selector)`` reads an element's text; ``requests`` lists every
URL the page asked for (Network domain), so a test can prove nothing left the machine.  Chromium runs with
the flags that keep it off the network (no background networking, no component updates) and a fresh
profile; it is killed when the context ends.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time

import httpx
import websockets

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    def __init__(self) -> None:
        if CHROMIUM is None:
            raise RuntimeError("chromium is not installed")
        self.profile = tempfile.mkdtemp(prefix="lanemon-chromium-")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-default-apps", "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
             "--window-size=1280,800", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = self._devtools_port()
        self.requests: list[str] = []
        self._id = 0
        self.ws = None

    def _devtools_port(self) -> int:
        path = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(path):
                with open(path) as fh:
                    first = fh.readline().strip()
                if first.isdigit():
                    return int(first)
            time.sleep(0.1)
        raise RuntimeError("chromium did not open its DevTools port")

    async def __aenter__(self) -> "Browser":
        targets = httpx.get(f"http://127.0.0.1:{self.port}/json", timeout=10).json()
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = await websockets.connect(page["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024)
        self._reader = asyncio.ensure_future(self._read())
        self._pending: dict[int, asyncio.Future] = {}
        await self.send("Network.enable")
        await self.send("Page.enable")
        return self

    async def __aexit__(self, *exc) -> None:
        self._reader.cancel()
        await self.ws.close()
        self.proc.kill()
        self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)

    async def _read(self) -> None:
        async for raw in self.ws:
            msg = json.loads(raw)
            if "id" in msg and msg["id"] in self._pending:
                self._pending.pop(msg["id"]).set_result(msg)
            elif msg.get("method") == "Network.requestWillBeSent":
                self.requests.append(msg["params"]["request"]["url"])

    async def send(self, method: str, **params) -> dict:
        self._id += 1
        fut = asyncio.get_running_loop().create_future()
        self._pending[self._id] = fut
        await self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        msg = await asyncio.wait_for(fut, 30)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg.get("result", {})

    async def open(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def eval(self, expression: str):
        res = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return res.get("result", {}).get("value")

    async def wait_for(self, expression: str, timeout: float = 60.0):
        """Poll a JavaScript expression until it is truthy; returns its value (or the last one)."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = await self.eval(expression)
            if value:
                return value
            await asyncio.sleep(0.25)
        return value
