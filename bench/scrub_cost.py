"""A GPU reading's scrub (Redactor.scrub of its event data) with the text cache (B) and without (A), alternating in one
process.  usage: PYTHONPATH=src python bench/scrub_cost.py  (prints the medians of 10 x 300 scrubs)"""
import time, statistics
from pathlib import Path
import lanemon.untrusted as u
from lanemon.client.telemetry import TelemetryScraper, summarise, map_dcgm, select
from lanemon.client.prom import parse
from lanemon.results.readings import event_data
from lanemon.events import Clock
s = TelemetryScraper("A", "http://gpu:9400/metrics", None, clock=Clock(), emit=lambda e: None)
data = event_data(s._parse(Path("tests/fixtures/dcgm_h100x2.prom").read_text()))
red = s.redactor
res = {"A": [], "B": []}
for r in range(10):
    for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
        u.TOKEN_CACHE_CHARS = -1 if side == "A" else 48
        red.text_cache.clear(); red.scrub(data, 200, items=80)
        t0 = time.thread_time()
        for _ in range(300):
            red.scrub(data, 200, items=80)
        res[side].append((time.thread_time() - t0) / 300 * 1e6)
a, b = statistics.median(res["A"]), statistics.median(res["B"])
print(f"scrub of one GPU reading (2 GPUs, dcgm_h100x2.prom): A {a:.0f} us, B {b:.0f} us, B/A {b/a:.2f}")
