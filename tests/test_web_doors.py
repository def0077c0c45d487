"""Issue 24 item 2: `lanemon web` is not an open door.  Another Host (DNS rebinding), another site's
page (Origin), no token, or one session too many are refused before any lanemon process starts; a
read-only cache dir is one line and exit 2."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time

import httpx
import psutil
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from lanemon.cli.web_guard import MAX_COLUMNS, Doors, _clamp, _hostname


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """`lanemon web --max-sessions 2 -- demo`; yields (port, token, process)."""
    port = free_port()
    home = tmp_path_factory.mktemp("home")
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "lanemon", "web", "--port", str(port), "--max-sessions", "2",
                             "--", "demo", "--time-scale", "0.2", "--no-record"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stderr.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]+)", line)
    assert m, line
    token = m.group(2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/static/", timeout=2)
            break
        except httpx.HTTPError:
            time.sleep(0.2)
    yield port, token, proc
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def children(proc) -> int:
    try:
        return len(psutil.Process(proc.pid).children(recursive=True))
    except psutil.NoSuchProcess:
        return 0


def ws_url(port: int, token: str | None) -> str:
    return f"ws://127.0.0.1:{port}/ws?width=80&height=24" + (f"&token={token}" if token else "")


async def connect_when_a_session_is_free(url: str, within_s: float = 60.0, **kw):
    """Open a session once the server has room for it.  An earlier test's sessions close asynchronously (each
    served lanemon exits first): on a busy machine the server still counts them for seconds and answers 503
    (at most --max-sessions) meanwhile.  Wait, bounded, for the free slot; any other refusal is raised."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            return await connect(url, **kw)
        except InvalidStatus as exc:
            if exc.response.status_code != 503 or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)


async def refused_status(url: str, **kw) -> int:
    with pytest.raises(InvalidStatus) as info:
        async with connect(url, open_timeout=10, **kw):
            pass
    return info.value.response.status_code


def test_foreign_hosts_origins_and_tokenless_requests_start_nothing(web):
    port, token, proc = web
    base = f"http://127.0.0.1:{port}"
    assert httpx.get(f"{base}/?token={token}", timeout=10).status_code == 200
    assert httpx.get(f"{base}/?token={token}", headers={"Host": "evil.example"}, timeout=10).status_code == 403
    assert httpx.get(f"{base}/?token={token}", headers={"Host": f"evil.example:{port}"}, timeout=10).status_code == 403
    assert httpx.get(f"{base}/", timeout=10).status_code == 403
    assert httpx.get(f"{base}/?token={token}x", timeout=10).status_code == 403
    own = f"http://127.0.0.1:{port}"

    async def attempts():
        return [
            await refused_status(ws_url(port, token), origin="http://evil.example"),
            await refused_status(ws_url(port, token), origin=f"http://evil.example:{port}"),
            await refused_status(ws_url(port, token), origin="null"),
            await refused_status(ws_url(port, token)),  # no Origin: not from a page of this server
            await refused_status(ws_url(port, None), origin=own),  # no token
        ]
    assert asyncio.run(attempts()) == [403] * 5
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": f"http://evil.example:{port}",
               "Host": f"evil.example:{port}"}  # a rebound name, its own page: both refused
    assert httpx.get(f"{base}/ws?token={token}", headers=upgrade, timeout=10).status_code == 403
    assert children(proc) == 0  # before: every foreign websocket started lanemon (24 processes for 12)


def test_the_page_points_its_socket_at_the_host_it_was_opened_on(web):
    port, token, proc = web
    for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
        page = httpx.get(f"http://127.0.0.1:{port}/?token={token}", headers={"Host": host}, timeout=10).text
        assert f'data-session-websocket-url="ws://{host}/ws"' in page  # where its cookie is
        assert f"http://{host}/static/" in page


def test_sessions_are_capped_and_the_cookie_stands_for_the_token(web):
    port, token, proc = web
    own = f"http://127.0.0.1:{port}"
    page = httpx.get(f"{own}/?token={token}", timeout=10)
    cookie = page.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    cookie_header = cookie.split(";")[0]

    async def sessions():
        a = await connect(ws_url(port, token), origin=own)
        b = await connect(ws_url(port, None), origin=own, additional_headers={"Cookie": cookie_header})
        try:
            got = await asyncio.wait_for(a.recv(), 30)  # the served lanemons draw
            await asyncio.wait_for(b.recv(), 30)
            await asyncio.sleep(1.0)
            before = children(proc)
            status = await refused_status(ws_url(port, token), origin=own)
            await asyncio.sleep(1.0)
            after = children(proc)
            await a.send('["resize", {"width": 1000000000, "height": 1000000000}]')  # clamped, not fatal
            await a.send('["stdin", ' + '"x"' * 1 + "]")
            await a.send("not json")
            await a.send("[" + "[" * 30000 + "]" * 30000 + "]")  # deep, under the 64 KiB cap
            await a.send('["ping", "still here"]')
            pong = None
            for _ in range(200):
                msg = await asyncio.wait_for(a.recv(), 30)
                if isinstance(msg, str) and "pong" in msg:
                    pong = msg
                    break
            return got, status, pong, (before, after)
        finally:
            await a.close()
            await b.close()
    got, status, pong, kids = asyncio.run(sessions())
    assert got and status == 503 and pong is not None and "still here" in pong
    assert kids[0] >= 2 and kids[1] == kids[0]  # the third tab started nothing


def _web_exit(env_cache: str, home: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": home, "XDG_CACHE_HOME": env_cache}
    return subprocess.run([sys.executable, "-m", "lanemon", "web", "--port", str(free_port())], env=env,
                          capture_output=True, text=True, timeout=60)


def _one_line_exit_2(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot write its page" in lines[0] and "Traceback" not in out.stderr, out.stderr
    assert "serving" not in out.stderr


def test_an_unusable_cache_dir_is_one_line_and_exit_2(tmp_path):
    """A cache dir that cannot exist (its parent is a file): before, 'serving ...' then a traceback."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _one_line_exit_2(_web_exit(str(blocker / "cache"), str(tmp_path)))


def test_a_read_only_cache_dir_is_one_line_and_exit_2(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root): the test above covers the rule")
        out = _web_exit(str(ro / "cache"), str(ro))
    finally:
        ro.chmod(0o700)
    _one_line_exit_2(out)


@pytest.mark.parametrize("value,port,ok", [
    ("127.0.0.1:8000", 8000, True), ("localhost:8000", 8000, True), ("127.0.0.1:8001", 8000, False),
    ("evil.example:8000", 8000, False), ("evil.example", 8000, False), ("127.0.0.1", 8000, False),
    ("127.0.0.1", 80, True), ("127.0.0.1:8000@evil", 8000, False), ("[::1]:8000", 8000, False), ("", 8000, False),
])
def test_host_rule_on_loopback(value, port, ok):
    assert Doors("127.0.0.1", port, "t").host_ok(value) is ok


def test_host_rule_on_a_wildcard_bind_takes_ip_literals_and_own_names_only():
    doors = Doors("0.0.0.0", 8000, "t")
    assert doors.host_ok("10.1.2.3:8000") and doors.host_ok("[fe80::1]:8000") and doors.host_ok("localhost:8000")
    assert doors.host_ok(f"{socket.gethostname()}:8000")
    assert not doors.host_ok("evil.example:8000")  # a rebound name
    assert doors.origin_ok("http://10.1.2.3:8000") and not doors.origin_ok("https://10.1.2.3:8000")
    assert not doors.origin_ok("http://evil.example:8000") and not doors.origin_ok("null")


def test_small_parsers():
    assert _hostname("[::1]:80") == ("::1", 80) and _hostname("a:b") is None and _hostname("::1") is None
    assert _clamp("99999999", 80, MAX_COLUMNS) == MAX_COLUMNS and _clamp("x", 80, MAX_COLUMNS) == 80
    assert _clamp("-5", 80, MAX_COLUMNS) == 1


def test_a_browser_message_over_64_kib_is_refused_by_the_socket_unbuffered(web):
    """aiohttp's default ``max_msg_size`` let a browser make the server buffer 4 MiB per message (then ignored):
    now the websocket layer closes with 1009 (message too big) for a frame over 64 KiB -- read from its header,
    before its payload -- and for a compressed message that inflates past it, while one just under the cap
    still goes through.  A real websocket client (``websockets``), with and without permessage-deflate."""
    port, token, proc = web
    own = f"http://127.0.0.1:{port}"

    async def closed_by(*payloads: str, **kw) -> tuple[int | None, list[str | None]]:
        """Send each payload then a ping, in one session; (the close code, the pong after each payload)."""
        ws = await connect_when_a_session_is_free(ws_url(port, token), origin=own, max_size=None, open_timeout=20,
                                                  **kw)
        pongs: list[str | None] = []
        try:
            await asyncio.wait_for(ws.recv(), 30)  # the session draws
            for i, payload in enumerate(payloads):
                await ws.send(payload)
                await ws.send(f'["ping", "after {i}"]')
                pongs.append(None)
                for _ in range(400):
                    msg = await asyncio.wait_for(ws.recv(), 30)
                    if isinstance(msg, str) and '"pong"' in msg:
                        seen.append(msg)
                        if f"after {i}" in msg:
                            pongs[-1] = msg
                            break
        except ConnectionClosed as exc:
            return (exc.rcvd.code if exc.rcvd else None), pongs
        finally:
            await ws.close()
        return None, pongs

    seen: list[str] = []

    async def run():
        # one session for the message just under the cap (a ping: answered by the server itself, where 60 KiB
        # of stdin was 61,440 key presses for the served app) and then the one over it (the end); a second,
        # with permessage-deflate, for the message that inflates past it (each session is a lanemon process)
        return (await closed_by('["ping", "under ' + "x" * (60 * 1024) + '"]', '["stdin", "' + "x" * (1 << 20) + '"]',
                                compression=None),
                await closed_by('["stdin", "' + "x" * (4 << 20) + '"]'))  # deflated to a few KB on the wire
    plain, deflated = asyncio.run(run())
    assert len(plain[1]) == 2 and plain[1][0] and "after 0" in plain[1][0]  # 60 KiB: read, and the session lives
    assert any("\"under xxx" in m for m in seen), seen[:3]  # the 60 KiB message itself answered
    # 1009, or, when the server closed while the client was still writing its megabyte, a dropped socket:
    # either way the session ended there (before, it read the whole message, ignored it and answered the ping)
    assert plain[0] in (1009, None) and plain[1][1] is None
    assert deflated[0] == 1009 and deflated[1] == [None]


@pytest.mark.parametrize("host", ["example.invalid", "999.1.1.1", "127.0.0.1:80", "", "in-use"])
def test_an_address_it_cannot_serve_on_is_one_line_and_exit_2(tmp_path, host):
    """`--host` that does not resolve, is not this machine's, is empty (it served every interface at
    'http://:PORT/'), or a port already in use: one line and exit 2 before 'serving ...' (was a traceback,
    exit 1, after the line saying it was serving)."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1] if host == "in-use" else free_port()
    try:
        out = subprocess.run([sys.executable, "-m", "lanemon", "web", "--host",
                              "127.0.0.1" if host == "in-use" else host, "--port", str(port), "--", "demo"],
                             capture_output=True, text=True, timeout=30,
                             env={**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    finally:
        busy.close()
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot serve on" in lines[0] and "Traceback" not in out.stderr, lines
    assert "serving" not in out.stderr
