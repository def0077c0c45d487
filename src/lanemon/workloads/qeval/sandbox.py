"""Run untrusted model code in a child process: the qeval code scorer's sandbox.

Model output is never imported or exec'd in lanemon's own process.  For each
solution :func:`run_code`

1. makes a fresh temporary directory and writes ``solution.py`` (the extracted
   code), ``hidden_tests.py`` (the task's asserts) and ``bootstrap.py`` there;
2. starts ``python -I -B bootstrap.py`` in a new session (its own process
   group) with cwd = that directory, a minimal environment and, in
   ``preexec_fn``, ``resource.setrlimit`` limits: CPU seconds, address space,
   file size, no core dumps, processes, open files;
3. the bootstrap installs a ``sys.addaudithook`` hook *before* it runs the
   solution: socket connect/bind/send, process creation (fork, exec, spawn,
   subprocess, system), ``ctypes`` and opening/creating/removing files outside
   the temp dir for writing are refused (the hook raises ``PermissionError``
   and remembers the violation, so catching the exception does not help);
4. the parent reads stdout/stderr with a size cap and a wall-clock timeout; on
   expiry or overflow it kills the whole process group.

This is a guard against accidents and naive escapes (a runaway loop, a huge
print, a stray socket or file write), **not a jail**: audit hooks can be
bypassed by determined code (e.g. through native extensions already loaded),
and the process runs as the same user as lanemon.  Run real untrusted models'
code in a container or VM if that matters.  See docs/QEVAL.md.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

__all__ = ["SandboxLimits", "SandboxResult", "run_code"]

MB = 1024 * 1024


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 10.0
    """Wall-clock limit; the process group is killed when it expires."""
    cpu_s: int | None = None
    """RLIMIT_CPU (default: timeout rounded up + 1)."""
    address_space: int = 512 * MB
    file_size: int = 1 * MB
    output_bytes: int = 1 * MB
    """stdout + stderr together; more is a failure ("output too large")."""
    max_processes: int = 64
    """RLIMIT_NPROC, counted per user by the kernel (not enforced for root; the audit hook is the real guard)."""
    open_files: int = 64


@dataclass
class SandboxResult:
    passed: bool
    reason: str
    seconds: float
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""


BOOTSTRAP = r'''
import sys

def _qeval_main():
    import os
    nonce = sys.stdin.readline().strip()
    root = os.path.realpath(os.getcwd())
    violations = []

    def inside(path):
        try:
            if isinstance(path, int):
                return True  # an already-open descriptor
            p = os.fsdecode(path)
            p = os.path.realpath(os.path.join(root, p))
            return p == root or p.startswith(root + os.sep)
        except Exception:
            return False

    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    PROCESS = {"os.fork", "os.forkpty", "os.system", "os.posix_spawn", "os.exec", "os.spawn",
               "subprocess.Popen", "os.startfile", "pty.spawn"}
    NETWORK = {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
               "socket.gethostbyname", "socket.gethostbyaddr"}
    PATH_WRITES = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.symlink",
                   "os.link", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "os.removexattr",
                   "os.setxattr"}

    def deny(kind, detail):
        msg = f"{kind} blocked ({detail})"
        violations.append(msg)
        raise PermissionError("qeval sandbox: " + msg)

    def hook(event, args):
        if event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & WRITE_FLAGS)
            if writing and path is not None and not inside(path):
                deny("file write outside the sandbox", os.fsdecode(path) if not isinstance(path, int) else path)
        elif event in NETWORK:
            detail = event
            if event in ("socket.connect", "socket.bind", "socket.sendto") and len(args) > 1:
                detail = f"{event} to {args[1]!r}"
            deny("network access", detail)
        elif event in PROCESS:
            deny("process creation", event)
        elif event.startswith("ctypes."):
            deny("ctypes", event)
        elif event in PATH_WRITES:
            paths = [a for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))]
            for p in paths:
                if not inside(p):
                    deny("file change outside the sandbox", f"{event} {os.fsdecode(p)}")

    with open("solution.py", encoding="utf-8") as f:
        solution = f.read()
    with open("hidden_tests.py", encoding="utf-8") as f:
        tests = f.read()
    sys.stdin.close()
    out = sys.__stdout__

    def report(status, detail=""):
        out.flush()
        out.write(f"\n@@QEVAL {nonce} {status} {detail}\n")
        out.flush()
        os._exit(0)

    sys.addaudithook(hook)
    ns = {"__name__": "solution", "__builtins__": __builtins__}
    stage = "solution"
    try:
        try:
            code = compile(solution, "solution.py", "exec")
        except SyntaxError as e:
            report("syntax", f"{e.msg} (line {e.lineno})")
        exec(code, ns)
        stage = "tests"
        exec(compile(tests, "hidden_tests.py", "exec"), ns)
    except SystemExit as e:
        if violations:
            report("violation", violations[0])
        report("exit", f"the {stage} called exit({e.code!r})")
    except BaseException as e:
        if violations:
            report("violation", violations[0])
        import traceback
        line = ""
        for fr in reversed(traceback.extract_tb(e.__traceback__)):
            if fr.filename == "hidden_tests.py":
                line = (fr.line or "").strip()
                break
        text = f"{type(e).__name__}: {e}".strip().rstrip(":")
        if isinstance(e, AssertionError) and not str(e) and line:
            text = f"AssertionError: {line}"
        elif line and stage == "tests":
            text = f"{text} (at {line})"
        report("error" if stage == "solution" else "failed", text.replace("\n", " ")[:500])
    if violations:
        report("violation", violations[0])
    report("passed")

_qeval_main()
'''


def _limits(limits: SandboxLimits):
    import resource

    cpu = limits.cpu_s if limits.cpu_s is not None else int(limits.timeout_s) + 1

    def apply() -> None:  # runs in the child between fork and exec
        def setl(which: int, value: int) -> None:
            try:
                soft, hard = resource.getrlimit(which)
                if hard != resource.RLIM_INFINITY:
                    value = min(value, hard)
                resource.setrlimit(which, (value, value))
            except (ValueError, OSError):
                pass

        setl(resource.RLIMIT_CPU, max(1, cpu))
        setl(resource.RLIMIT_AS, limits.address_space)
        setl(resource.RLIMIT_FSIZE, limits.file_size)
        setl(resource.RLIMIT_CORE, 0)
        setl(resource.RLIMIT_NPROC, limits.max_processes)
        setl(resource.RLIMIT_NOFILE, limits.open_files)

    return apply


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _fmt_bytes(n: int) -> str:
    return f"{n // MB} MB" if n >= MB and n % MB == 0 else f"{n} bytes"


def _fmt_s(s: float) -> str:
    return f"{s:g} s"


def run_code(solution: str, tests: str, limits: SandboxLimits | None = None,
             python: str | None = None) -> SandboxResult:
    """Run ``solution`` then ``tests`` (Python source) in a sandboxed child; never raises for bad code."""
    limits = limits or SandboxLimits()
    nonce = secrets.token_hex(16)
    tmp = tempfile.mkdtemp(prefix="lanemon-qeval-")
    start = time.monotonic()
    try:
        for name, text in (("solution.py", solution), ("hidden_tests.py", tests), ("bootstrap.py", BOOTSTRAP)):
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": tmp, "TMPDIR": tmp,
               "PYTHONIOENCODING": "utf-8"}
        try:
            proc = subprocess.Popen(
                [python or sys.executable, "-I", "-B", "bootstrap.py"], cwd=tmp, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, preexec_fn=_limits(limits), close_fds=True,
            )
        except OSError as exc:
            return SandboxResult(False, f"could not start the sandbox: {exc}", time.monotonic() - start)
        bufs: dict[str, bytearray] = {"out": bytearray(), "err": bytearray()}
        total = [0]
        overflow = threading.Event()
        lock = threading.Lock()

        def reader(stream, key: str) -> None:
            try:
                while True:
                    chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                    if not chunk:
                        return
                    with lock:
                        total[0] += len(chunk)
                        if total[0] > limits.output_bytes:
                            overflow.set()
                            _kill_group(proc)
                            return
                        bufs[key] += chunk
            except (OSError, ValueError):
                return

        threads = [threading.Thread(target=reader, args=(proc.stdout, "out"), daemon=True),
                   threading.Thread(target=reader, args=(proc.stderr, "err"), daemon=True)]
        for t in threads:
            t.start()
        try:
            proc.stdin.write(nonce.encode() + b"\n")
            proc.stdin.close()
        except OSError:
            pass
        timed_out = False
        try:
            proc.wait(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        _kill_group(proc)  # the child and anything it left behind
        if timed_out:
            proc.wait()
        for t in threads:
            t.join(2.0)
        for s in (proc.stdout, proc.stderr):
            try:
                s.close()
            except OSError:
                pass
        seconds = time.monotonic() - start
        out = bytes(bufs["out"]).decode("utf-8", "replace")
        err = bytes(bufs["err"]).decode("utf-8", "replace")
        rc = proc.returncode
        res = SandboxResult(False, "", seconds, rc, out[-4000:], err[-4000:])
        if overflow.is_set():
            res.reason = f"output too large (more than {_fmt_bytes(limits.output_bytes)})"
            return res
        if timed_out:
            res.reason = f"timeout after {_fmt_s(limits.timeout_s)}"
            return res
        marker = f"@@QEVAL {nonce} "
        idx = out.rfind(marker)
        if idx < 0:
            res.reason = _crash_reason(rc, err, limits)
            return res
        status, _, detail = out[idx + len(marker):].strip().partition(" ")
        detail = detail.strip()
        if status == "passed":
            res.passed, res.reason = True, "passed"
        elif status == "failed":
            res.reason = f"tests failed: {detail}"
        elif status == "violation":
            res.reason = detail
        elif status == "syntax":
            res.reason = f"syntax error: {detail}"
        elif status == "exit":
            res.reason = detail
        elif detail.startswith("MemoryError"):
            res.reason = f"memory limit exceeded ({_fmt_bytes(limits.address_space)})"
        else:
            res.reason = f"solution raised {detail}"
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _crash_reason(rc: int | None, err: str, limits: SandboxLimits) -> str:
    if rc is not None and rc < 0:
        sig = -rc
        if sig == signal.SIGXCPU:
            return f"CPU time limit exceeded ({limits.cpu_s or int(limits.timeout_s) + 1} s)"
        if sig == signal.SIGXFSZ:
            return f"file size limit exceeded ({_fmt_bytes(limits.file_size)})"
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"crashed (killed by {name})"
    last = err.strip().splitlines()[-1] if err.strip() else ""
    if "MemoryError" in last:
        return f"memory limit exceeded ({_fmt_bytes(limits.address_space)})"
    return f"crashed (exit {rc}{': ' + last[:300] if last else ''})"
