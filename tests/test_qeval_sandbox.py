"""The code scorer's sandbox: hostile solutions fail with the right reason, lanemon is unaffected."""

from __future__ import annotations

import os
import resource
import socket
import tempfile
import time

import pytest

from lanemon.workloads.qeval.sandbox import SandboxLimits, run_code

FAST = SandboxLimits(timeout_s=2.0)


@pytest.fixture
def parent_state(monkeypatch):
    """lanemon's own process is unaffected: same pid, cwd and limits; the sandbox's temp dir is removed."""
    import lanemon.workloads.qeval.sandbox as sb

    made: list[str] = []
    real = tempfile.mkdtemp

    def mkdtemp(*a, **kw):
        made.append(real(*a, **kw))
        return made[-1]

    monkeypatch.setattr(sb.tempfile, "mkdtemp", mkdtemp)
    before = (os.getpid(), os.getcwd(), resource.getrlimit(resource.RLIMIT_AS), resource.getrlimit(resource.RLIMIT_CPU),
              resource.getrlimit(resource.RLIMIT_NOFILE))
    yield
    after = (os.getpid(), os.getcwd(), resource.getrlimit(resource.RLIMIT_AS), resource.getrlimit(resource.RLIMIT_CPU),
             resource.getrlimit(resource.RLIMIT_NOFILE))
    assert after == before
    assert made and not any(os.path.exists(d) for d in made), "sandbox temp dir left behind"


def test_passing_and_failing_solutions():
    ok = run_code("def f(x):\n    return x + 1\n", "assert f(1) == 2\n", FAST)
    assert ok.passed and ok.reason == "passed"
    bad = run_code("def f(x):\n    return x\n", "assert f(1) == 2\n", FAST)
    assert not bad.passed and bad.reason == "tests failed: AssertionError: assert f(1) == 2"
    assert run_code("def f(:\n", "", FAST).reason.startswith("syntax error")
    assert run_code("import sys\nsys.exit(0)\n", "assert False\n", FAST).reason == "the solution called exit(0)"
    assert run_code("raise RuntimeError('boom')\n", "", FAST).reason == "solution raised RuntimeError: boom"


def test_infinite_loop_times_out(parent_state):
    t0 = time.monotonic()
    res = run_code("def f():\n    while True:\n        pass\n", "f()\n", FAST)
    elapsed = time.monotonic() - t0
    assert not res.passed and res.reason == "timeout after 2 s"
    assert elapsed < FAST.timeout_s + 3


def test_huge_output_is_cut_and_fails(parent_state):
    t0 = time.monotonic()
    res = run_code("import sys\nsys.stdout.write('x' * 50_000_000)\n", "", FAST)
    assert not res.passed and res.reason == "output too large (more than 1 MB)"
    assert time.monotonic() - t0 < FAST.timeout_s + 3
    assert len(res.stdout) <= 4000


def test_socket_to_loopback_is_blocked(parent_state):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    try:
        code = (f"import socket\ns = socket.socket()\n"
                f"try:\n    s.connect(('127.0.0.1', {port}))\nexcept OSError:\n    pass\n"
                f"def f():\n    return 1\n")
        res = run_code(code, "assert f() == 1\n", FAST)
        assert not res.passed
        assert res.reason.startswith("network access blocked") and str(port) in res.reason
        with pytest.raises(socket.timeout):
            server.accept()  # nothing ever connected
    finally:
        server.close()


def test_write_outside_temp_dir_is_blocked(parent_state, tmp_path):
    target = tmp_path / "escaped.txt"
    res = run_code(f"open({str(target)!r}, 'w').write('hi')\n", "", FAST)
    assert not res.passed
    assert res.reason == f"file write outside the sandbox blocked ({target})"
    assert not target.exists()
    # writing inside its own temp dir is fine
    inside = run_code("open('scratch.txt', 'w').write('hi')\ndef f():\n    return open('scratch.txt').read()\n",
                      "assert f() == 'hi'\n", FAST)
    assert inside.passed, inside.reason
    removed = run_code(f"import os\nos.remove({str(tmp_path)!r} + '/nothing')\n", "", FAST)
    assert removed.reason.startswith("file change outside the sandbox blocked")


def test_fork_bomb_is_blocked(parent_state):
    t0 = time.monotonic()
    code = ("import os\nfor _ in range(200):\n    try:\n        pid = os.fork()\n    except Exception:\n"
            "        continue\n    if pid == 0:\n        while True:\n            pass\n")
    res = run_code(code, "", FAST)
    assert not res.passed and res.reason == "process creation blocked (os.fork)"
    assert time.monotonic() - t0 < FAST.timeout_s + 3
    sub = run_code("import subprocess\nsubprocess.run(['true'])\n", "", FAST)
    assert sub.reason == "process creation blocked (subprocess.Popen)"


def test_memory_limit(parent_state):
    res = run_code("x = bytearray(2_000_000_000)\n", "", FAST)
    assert not res.passed and res.reason == "memory limit exceeded (512 MB)"
