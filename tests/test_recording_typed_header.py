"""The recording header's typed parts (recording/schema.py): ``host`` written from its Struct and checked on
read, ``qeval`` checked, a host sample's ``gpus`` checked like a GPU event's."""

from __future__ import annotations

import pytest

from lanemon.recording.schema import BadRow, HostInfo, check_header, decode_event
from lanemon.recording.writer import host_info, make_header


def test_the_header_host_is_written_from_its_struct_with_the_same_keys():
    info = host_info()
    assert isinstance(info, HostInfo) and info.platform and info.python and info.cpus
    header = make_header("live", [{"name": "A", "url": "http://x/v1", "model": None}])
    assert list(header["host"]) == ["platform", "python", "cpus", "memory_bytes"]  # the keys and order of before
    assert header["host"]["cpus"] == info.cpus and isinstance(header["host"]["memory_bytes"], int)
    check_header(header)


@pytest.mark.parametrize("part, bad, where", [
    ("host", {"cpus": "many"}, "$.host.cpus"),
    ("host", ["x"], "$.host"),
    ("qeval", {"lane": "A", "tasks": "ten"}, "$.qeval.tasks"),
])
def test_a_header_whose_host_or_qeval_does_not_fit_is_refused_naming_the_field(part, bad, where):
    header = make_header("qeval", [{"name": "A", "url": "http://x/v1"}])
    check_header({**header, "qeval": {"lane": "A", "tasks": 3}, "host": {"platform": "p", "extra": [1]}})  # fits
    with pytest.raises(ValueError, match=where.replace("$", r"\$").replace(".", r"\.")):
        check_header({**header, part: bad})


def test_a_host_sample_gpus_are_checked_like_a_gpu_events():
    ok = decode_event(b'{"t": 1, "kind": "host", "data": {"cpu_pct": 3, "gpus": [{"gpu": "0", "power_w": 120.5}]}}')
    assert ok.data["gpus"] == [{"gpu": "0", "power_w": 120.5}]
    with pytest.raises(BadRow, match="gpus"):
        decode_event(b'{"t": 1, "kind": "host", "data": {"gpus": [{"gpu": "0", "power_w": "hot"}]}}')
    with pytest.raises(BadRow, match="gpus"):
        decode_event(b'{"t": 1, "kind": "host", "data": {"gpus": [7]}}')
