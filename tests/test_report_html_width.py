"""The HTML report at a 900 px browser (issue 25): a table cell never breaks a figure from its label over two
lines (the decode table's Leader ``A (1.20×)`` and ``max 172 ms (n=8)`` wrapped), and a table wider than the
page scrolls in its own box instead of the whole page (the server table made the page 969 px wide)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from lanemon.reports.analyse import analyze
from lanemon.reports.render import render_html
from lanemon.reports.render.html import NOWRAP_CHARS, cell_class, column_classes

SAMPLE = Path(__file__).resolve().parents[1] / "sample_sessions" / "decode.jsonl"


def test_short_cells_never_wrap_and_long_text_still_does():
    rows = [["C1", "A ▲", "max 172 ms (n=8)", "A (1.51×, band 5.2 % from the reps)", "x" * (NOWRAP_CHARS + 1)],
            ["", "B", "221 ms", "A (1.20×)", "0.17 s / 148 / 1.90 s / 256"]]
    columns = column_classes(["C", "lane", "TTFT p90", "Leader", "note"], rows)
    assert [[str(cell_class(columns[j], c)) for j, c in enumerate(r)] for r in rows] == [
        [' class="t nw"', ' class="t nw"', ' class="t nw"', ' class="t"', ' class="t"'],
        [' class="t nw"', ' class="t nw"', ' class="t nw"', ' class="t nw"', ' class="t nw"']]
    assert str(cell_class("t", None)) == ' class="t"'  # a header may wrap


def test_the_decode_table_cells_are_nowrap_and_every_table_scrolls_in_its_box():
    page = render_html(analyze(SAMPLE))
    assert re.search(r"td\.nw\s*\{\s*white-space:\s*nowrap", page)
    assert re.search(r"\.tscroll\s*\{[^}]*overflow-x:\s*auto", page)
    assert page.count("<table") == page.count('<div class="tscroll"><table')
    decode = page[page.index('<section id="decode">'):]
    decode = decode[:decode.index("</section>")]
    leader = re.findall(r'<td class="([^"]*)">[AB] \(1\.\d\d×\)</td>', decode)
    maxed = re.findall(r'<td class="([^"]*)">max \d+ ms \(n=8\)</td>', decode)
    assert leader and maxed
    assert all("nw" in c.split() for c in leader + maxed), (leader, maxed)


@pytest.mark.slow
@pytest.mark.parametrize("recording", ["decode.jsonl", "today.jsonl"])
def test_at_900_px_no_short_cell_wraps_and_the_page_does_not_scroll_sideways(tmp_path, recording):
    browser_mod = pytest.importorskip("browser")
    if browser_mod.CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    path = tmp_path / "report.html"
    path.write_text(render_html(analyze(SAMPLE.parent / recording)), encoding="utf-8")
    lines = """[...document.querySelectorAll('#decode td')].map(td => {
        const r = document.createRange(); r.selectNodeContents(td);
        return [td.textContent, new Set([...r.getClientRects()].map(x => Math.round(x.top))).size];
    }).filter(x => x[1] > 1)"""

    async def go():
        async with browser_mod.Browser() as b:
            await b.send("Emulation.setDeviceMetricsOverride", width=900, height=1200, deviceScaleFactor=1,
                         mobile=False)
            await b.open(path.as_uri())
            assert await b.wait_for("document.readyState === 'complete' && !!document.querySelector('#decode td')")
            wrapped = await b.eval(lines)
            widths = await b.eval("[document.documentElement.clientWidth, document.documentElement.scrollWidth]")
            boxes = await b.eval("[...document.querySelectorAll('#decode .tscroll')].map(d => d.scrollWidth - d.clientWidth)")
            return wrapped, widths, boxes

    wrapped, (client, scroll), boxes = asyncio.run(go())
    assert 860 <= client <= 900  # 900 less the vertical scrollbar
    # every cell of the decode table on one line (today.jsonl's 'A (1.51×, band 5.2 % from the reps)' may wrap)
    assert [text for text, _ in wrapped if len(text) <= NOWRAP_CHARS] == [], wrapped
    assert boxes and max(boxes) <= 1, boxes  # the decode table fits the page at 900 px
    assert scroll <= client, (scroll, client)  # a wider table (the server view's) scrolls in its box, not the page
