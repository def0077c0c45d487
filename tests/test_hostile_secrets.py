"""Issue 11 item 3: a server that echoes the key, and a lane URL with credentials, leave no secret in
any event, message or `check --json` answer."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys

from hostile_server import HostileLane, HostileServer

from lanemon import events as schema
from lanemon.client.http import LaneClient
from lanemon.config import LaneConfig
from lanemon.events import Clock

KEY = "sk-hostile-planted-4e9d1c7b2a"
USER, PASSWORD = "alice", "pa55-Word-913"
QKEY, QTOKEN = "qkey-31415926535", "qtok-27182818284"
SECRETS = (KEY, PASSWORD, QKEY, QTOKEN)


def cred_url(port: int) -> str:
    return f"http://{USER}:{PASSWORD}@127.0.0.1:{port}/v1?api_key={QKEY}&token={QTOKEN}"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


async def exercise(url: str) -> tuple[list, list]:
    """Probe, several streams (completions, chat, tools), two non-streaming posts; every event."""
    events: list = []
    lane = LaneConfig("H", url, api_key_env="HOSTILE_PLANTED_KEY")
    client = LaneClient(lane, clock=Clock(), emit=events.append)
    extra: list = []
    try:
        await client.probe_models()
        for i in range(8):
            endpoint = "chat" if i % 2 else "completions"
            kw = {"extra": {"tools": [{"type": "function", "function": {"name": "read_file"}}]}} if i == 5 else {}
            body = client.build_body(endpoint, prompt="hi", max_tokens=8, **kw)
            await client.stream(endpoint, body, purpose="test")
        for _ in range(2):
            body = client.build_body("completions", prompt="hi", max_tokens=4, extra={"logprobs": 1})
            body["stream"] = False
            extra.append(await client.post_json("completions", body))
    finally:
        await client.aclose()
    return events, extra


def test_an_echoed_key_and_url_credentials_never_become_an_event(monkeypatch):
    monkeypatch.setenv("HOSTILE_PLANTED_KEY", KEY)
    lane = HostileLane(KEY, unauthorized_every=3, stream_error_every=4)
    with HostileServer(lane) as srv:
        events, posts = asyncio.run(exercise(cred_url(srv.port)))
    # the server really did receive the secrets and echo the key back (else this test proves nothing)
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()  # httpx: URL userinfo wins
    assert all(r.headers.get("authorization") in (f"Bearer {KEY}", basic) for r in srv.requests)
    assert all(r.query.get("api_key") == [QKEY] and r.query.get("token") == [QTOKEN] for r in srv.requests)
    kinds = {e.kind for e in events}
    assert {schema.PROBE, schema.TOKEN, schema.DONE, schema.ERROR, schema.FIRST_BYTE} <= kinds
    errors = [e.data["message"] for e in events if e.kind == schema.ERROR]
    assert any("Incorrect API key provided" in m for m in errors) and any("error in stream" in m for m in errors)
    dumped = json.dumps([e.to_json_obj() for e in events])
    assert leaks(dumped) == [], leaks(dumped)
    assert "[redacted]" in dumped  # the echoes were there, and were replaced
    messages = " ".join(str(p[3]) for p in posts)
    assert leaks(messages) == []


def test_connection_errors_quote_the_url_without_credentials(monkeypatch):
    monkeypatch.setenv("HOSTILE_PLANTED_KEY", KEY)
    port = closed_port()
    events, posts = asyncio.run(exercise(cred_url(port)))
    messages = [e.data.get("message", "") for e in events if e.kind in (schema.ERROR, schema.PROBE)]
    assert messages and all(f"127.0.0.1:{port}" in m for m in messages), messages
    assert leaks(" ".join(messages) + " ".join(str(p[3]) for p in posts)) == []


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOSTILE_PLANTED_KEY=KEY)
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_check_json_reports_the_public_url_and_no_secret(tmp_path):
    with HostileServer(HostileLane(KEY, unauthorized_every=2)) as srv:
        up = run_cli("check", cred_url(srv.port), "--json")
    down_port = closed_port()
    down = run_cli("check", cred_url(down_port), "--json")
    for out, port in ((up, srv.port), (down, down_port)):
        assert "Traceback" not in out.stderr, out.stderr
        assert leaks(out.stdout + out.stderr) == []
        assert json.loads(out.stdout)["url"] == f"http://127.0.0.1:{port}/v1"
    assert any("Incorrect API key" in c["detail"] for c in json.loads(up.stdout)["checks"])
