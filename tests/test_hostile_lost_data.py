"""Lost data is never exit 0 (issue 24 item 5): a recording or an ``-o`` output that could not be completed
(disk full, unwritable) makes the command exit 4 (EXIT_DATA_LOST) and say what was kept.

The disk is filled two ways: a file object that takes N bytes and then raises ENOSPC (always runs), and a
real 48 KB tmpfs (when this process may mount one, i.e. as root; skipped otherwise)."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from lanemon.cli.common import EXIT_DATA_LOST, EXIT_OK, LOST, DataLost, recording_saved, write_output
from lanemon.cli.main import main
from lanemon.events import TOKEN, Event
from lanemon.recording.reader import Recording
from lanemon.recording.writer import Recorder, make_header

LANES = [{"name": "A", "url": "http://127.0.0.1:9/v1", "model": "m"}]


class SmallDisk:
    """A raw file that accepts *room* bytes, then writes what still fits and raises ENOSPC, as a full disk does."""

    def __init__(self, path: Path, room: int) -> None:
        self._fh = open(path, "ab", buffering=0)  # noqa: SIM115 - closed by close()
        self.room = room

    def write(self, data: bytes) -> int:
        n = min(len(data), self.room)
        self._fh.write(data[:n])
        self.room -= n
        if n < len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return n

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._fh.close()


def small_disk(monkeypatch, room: int) -> None:
    """Every recording opened from now on lives on a disk with *room* bytes free."""
    from lanemon.recording import writer

    real = writer._open_exclusive

    def open_small(path):
        path, fh = real(path)
        fh.close()
        return path, SmallDisk(path, room)

    monkeypatch.setattr(writer, "_open_exclusive", open_small)


def token(i: int) -> Event:
    return Event(i * 1_000_000, TOKEN, "A", "A-1", {"text": f"word{i} " * 5})


def test_full_disk_keeps_whole_lines_and_says_how_many(tmp_path, monkeypatch):
    small_disk(monkeypatch, 2000)
    rec = Recorder(tmp_path / "r.jsonl", make_header("race", LANES), flush_interval=0)
    for i in range(100):
        rec(token(i))
    rec.close()
    assert rec.failed and "No space left on device" in rec.failed
    kept = list(Recording(rec.path).events())
    assert len(kept) == rec.kept_events > 0 and rec.kept_events + rec.lost_events == 100
    assert rec.path.read_bytes().endswith(b"\n")  # the half-written line was cut off
    assert Recording(rec.path).skipped == 0
    assert f"first {rec.kept_events:,} events; {rec.lost_events:,} later events were not recorded" in rec.outcome()


def test_no_room_for_the_header_says_nothing_was_kept(tmp_path, monkeypatch):
    small_disk(monkeypatch, 10)
    rec = Recorder(tmp_path / "r.jsonl", make_header("race", LANES))
    rec(token(1))
    assert rec.failed and rec.path.stat().st_size == 0
    assert "no event was kept" in rec.outcome()


def test_recording_saved_marks_the_run_lost(tmp_path, monkeypatch, capsys):
    small_disk(monkeypatch, 1500)
    LOST.reset()
    rec = Recorder(tmp_path / "r.jsonl", make_header("race", LANES), flush_interval=0)
    for i in range(50):
        rec(token(i))
    assert recording_saved(rec) is False
    err = capsys.readouterr().err
    assert "recording stopped" in err and "recording incomplete" in err and "recording saved" not in err
    assert LOST.exit_code(EXIT_OK) == EXIT_DATA_LOST and LOST.exit_code(1) == EXIT_DATA_LOST
    assert LOST.exit_code(130) == 130  # Ctrl-C keeps its own code
    LOST.reset()


@pytest.mark.parametrize("argv", [
    ["race", "--demo", "--headless", "--time-scale", "0.05", "--max-tokens", "64", "--repeat", "2"],
    ["race", "--demo", "--json", "--time-scale", "0.05", "--max-tokens", "64"],
    ["bench", "decode", "--demo", "--headless", "--time-scale", "0.05", "--levels", "1", "--categories",
     "translation", "--max-tokens", "16", "--no-categories"],
])
def test_a_run_whose_recording_fills_the_disk_exits_4(tmp_path, monkeypatch, capsys, argv):
    small_disk(monkeypatch, 6000)
    code = main([*argv, "--record", str(tmp_path / "run.jsonl")])
    err = capsys.readouterr().err
    assert code == EXIT_DATA_LOST, err
    assert "No space left on device" in err and "recording incomplete" in err and "recording saved" not in err
    kept = Recording(tmp_path / "run.jsonl")
    assert len(list(kept.events())) > 0 and kept.skipped == 0


def test_a_complete_recording_still_exits_0(tmp_path, capsys):
    code = main(["race", "--demo", "--headless", "--time-scale", "0.05", "--max-tokens", "8",
                 "--record", str(tmp_path / "ok.jsonl")])
    assert code == EXIT_OK and "recording saved" in capsys.readouterr().err


# ---------------------------------------------------------------- -o outputs: all or nothing
def test_write_output_full_disk_leaves_the_old_file(tmp_path, monkeypatch):
    out = tmp_path / "report.md"
    out.write_text("the last good report")

    def chunks():
        yield "# new report\n"
        raise_full()

    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.raises(DataLost, match=r"No space left on device; nothing was written \(the previous file is "
                                       r"unchanged\)"):
        write_output(out, "x" * 1000)
    assert out.read_text() == "the last good report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no .part left behind


def raise_full():
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_write_output_streams_chunks(tmp_path):
    out = tmp_path / "x.csv"
    write_output(out, (f"{i}\n" for i in range(1000)))
    assert out.read_text().splitlines()[-1] == "999"


def test_write_output_to_a_fifo_or_device_writes_it_and_never_replaces_it(tmp_path):
    """``-o /dev/null`` (or a FIFO, /dev/stdout) is written in place: the all-or-nothing rename once replaced
    /dev/null itself with a regular file, for every program on the machine."""
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_output(fifo, (f"{i}\n" for i in range(100)))
    reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and got[0].splitlines()[-1] == b"99"
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]  # no .part beside it
    before = os.stat("/dev/null")
    write_output(Path("/dev/null"), "discarded")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_write_output_through_a_symlink_replaces_its_target_and_keeps_the_link_and_mode(tmp_path):
    real = tmp_path / "reports" / "today.md"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o644)
    link = tmp_path / "latest.md"
    link.symlink_to(real)
    write_output(link, "new")
    assert link.is_symlink() and real.read_text() == "new" and (real.stat().st_mode & 0o777) == 0o644


def test_unwritable_folder_is_exit_2_before_anything(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    sample = next(Path(__file__).parent.parent.joinpath("sample_sessions").glob("*.jsonl"))
    assert main(["report", str(sample), "-o", str(ro / "r.md")]) == 2


# ---------------------------------------------------------------- a real full disk (tmpfs), when allowed
@contextlib.contextmanager
def tmpfs(size: str):
    where = Path(tempfile.mkdtemp(prefix="lanemon-tmpfs-"))
    ok = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                                              capture_output=True).returncode == 0
    try:
        if not ok:
            pytest.skip("cannot mount a tmpfs here (not root, or no mount permission)")
        yield where
    finally:
        if ok:
            subprocess.run(["umount", str(where)], capture_output=True)
        with contextlib.suppress(OSError):
            where.rmdir()


def test_real_full_tmpfs_race_exits_4_and_keeps_whole_lines(capsys):
    with tmpfs("48k") as disk:
        code = main(["race", "--demo", "--headless", "--time-scale", "0.05", "--max-tokens", "400",
                     "--repeat", "3", "--record", str(disk / "run.jsonl")])
        err = capsys.readouterr().err
        assert code == EXIT_DATA_LOST, err
        assert "No space left on device" in err and "recording incomplete" in err
        rec = Recording(disk / "run.jsonl")
        assert len(list(rec.events())) > 0 and rec.skipped == 0


def test_real_full_tmpfs_report_and_export_exit_4(capsys):
    sample = max(Path(__file__).parent.parent.joinpath("sample_sessions").glob("*.jsonl"),
                 key=lambda p: p.stat().st_size)
    with tmpfs("16k") as disk:
        (disk / "filler").write_bytes(b"x" * (12 * 1024))
        for argv in (["report", str(sample), "-o", str(disk / "r.html")],
                     ["export", str(sample), "--format", "csv", "-o", str(disk / "e.csv")]):
            code = main(argv)
            err = capsys.readouterr().err
            assert code == EXIT_DATA_LOST, (argv, err)
            assert "No space left on device" in err and "nothing was written" in err
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]


def test_a_reader_that_stops_reading_is_exit_141_without_a_traceback():
    """`lanemon export REC | head`: a BrokenPipeError traceback and exit 1.  Now quiet and 141 (128 + SIGPIPE):
    the output was cut, so never 0."""
    import subprocess
    import sys
    from pathlib import Path

    rec = Path(__file__).resolve().parent.parent / "sample_sessions" / "today.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "lanemon", "export", str(rec)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout.read(100)
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 141, stderr
    assert b"Traceback" not in stderr and b"Exception ignored" not in stderr, stderr
