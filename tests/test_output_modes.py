"""Files lanemon writes follow the umask, as every Unix tool's do (issue 40 item 7: `-o report.html` was
created 0600 -- tempfile.mkstemp's mode -- so the web server or a colleague could not read a shared report)."""

from __future__ import annotations

import os
import stat

import pytest

from lanemon.cli.common import write_output
from lanemon.recording.writer import Recorder, make_header


@pytest.fixture
def umask():
    old = os.umask(0o022)
    try:
        yield os.umask
    finally:
        os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_an_output_written_with_o_follows_the_umask(tmp_path, umask, mask, expected):
    umask(mask)
    write_output(tmp_path / "report.html", "<html></html>")
    assert mode(tmp_path / "report.html") == expected
    (tmp_path / "races.csv").write_text("old")
    os.chmod(tmp_path / "races.csv", 0o640)
    write_output(tmp_path / "races.csv", "new")  # a file replaced keeps its own mode
    assert mode(tmp_path / "races.csv") == 0o640


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_a_recording_follows_the_umask(tmp_path, umask, mask, expected):
    umask(mask)
    rec = Recorder(tmp_path / "s.jsonl", make_header("demo", []))
    rec.close()
    assert mode(rec.path) == expected
