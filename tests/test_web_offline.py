"""`lanemon web` in a real browser: nothing leaves the machine, and the footer shows without a key press."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import time

import httpx
import pytest

from lanemon.cli.common import UsageError
from lanemon.cli.web import offline_page, offline_templates

REMOTE = re.compile(r"(?:src|href|url)\s*[=(]\s*[\"']?https?://", re.I)


def test_offline_page_serves_the_fonts_from_its_own_static_folder(tmp_path):
    page = (offline_templates(tmp_path) / "app_index.html").read_text()
    assert not REMOTE.search(page)
    assert "fonts/RobotoMono-VariableFont_wght.ttf" in page
    # the original page did ask a remote font service: the test can fail
    import textual_serve
    from pathlib import Path

    original = (Path(textual_serve.__file__).parent / "templates" / "app_index.html").read_text()
    assert REMOTE.search(original)


def test_a_page_that_would_still_load_from_another_host_is_refused():
    with pytest.raises(UsageError, match="another host"):
        offline_page('<script src="https://cdn.example.com/x.js"></script>')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def web_demo(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "lanemon", "web", "--port", str(port), "--", "demo",
                             "--time-scale", "0.2", "--no-record"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()  # "lanemon web: serving ... on http://127.0.0.1:PORT/?token=... "
    url = first.split(" on ", 1)[-1].split(" ", 1)[0]
    assert url.startswith(f"http://127.0.0.1:{port}/?token="), first
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail(f"lanemon web did not start: {proc.stderr.read()[:2000]}")
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_served_page_and_fonts_are_local(web_demo):
    page = httpx.get(web_demo, timeout=10).text
    urls = re.findall(r"(?:src|href|url)\s*[=(]\s*[\"']?(https?://[^\"')\s]+)", page, re.I)
    assert urls and {httpx.URL(u).host for u in urls} == {"127.0.0.1"}, urls
    font = re.search(r'url\("([^"]+RobotoMono-VariableFont_wght\.ttf)"\)', page).group(1)
    assert httpx.get(httpx.URL(web_demo).join(font), timeout=10).status_code == 200


FOOTER_ROW_PX = 30
BLANK_ROW_MAX_BYTES = 1500
"""A PNG of a uniform 1280x30 strip is a few hundred bytes; the footer's key hints make it several KB."""


@pytest.mark.slow
def test_browser_shows_the_footer_without_a_key_press_and_loads_nothing_remote(web_demo):
    """Headless Chromium opens the page and no key is pressed: the bottom row (the footer's key hints) is drawn,
    while a strip known to be empty is not; every request the page made went to this machine."""
    import base64

    browser_mod = pytest.importorskip("browser")
    if browser_mod.CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")

    async def strip(b, y: float, height: float, width: float) -> int:
        shot = await b.send("Page.captureScreenshot", format="png",
                            clip={"x": 0, "y": y, "width": width, "height": height, "scale": 1})
        return len(base64.b64decode(shot["data"]))

    async def go():
        async with browser_mod.Browser() as b:
            await b.open(web_demo)
            assert await b.wait_for("document.body.classList.contains('-first-byte')", 60), "no terminal output"
            vp = (await b.send("Page.getLayoutMetrics"))["cssVisualViewport"]
            w, h = vp["clientWidth"], vp["clientHeight"]
            footer = 0
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and footer <= BLANK_ROW_MAX_BYTES:
                await asyncio.sleep(0.5)
                footer = await strip(b, h - FOOTER_ROW_PX, FOOTER_ROW_PX, w)
            # the control: below the page's last row there is only background
            blank = await strip(b, h - 4, 4, w)
            return footer, blank, list(b.requests)

    footer, blank, requests = asyncio.run(go())
    assert blank < BLANK_ROW_MAX_BYTES, blank
    assert footer > BLANK_ROW_MAX_BYTES, f"the footer row stayed blank ({footer} bytes of PNG)"
    hosts = {httpx.URL(u).host for u in requests if u.startswith("http")}
    assert hosts == {"127.0.0.1"}, hosts
