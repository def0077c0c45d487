"""Run model-written code in an operating-system sandbox and bring back plain JSON outputs.

The qeval code scorer never runs model output in lanemon's own process, and it
no longer relies on anything inside the interpreter (audit hooks can be
bypassed).  For each solution :func:`run_function`

1. starts ``bwrap`` (bubblewrap) with an empty environment:
   new user, pid, network, ipc, uts and cgroup namespaces (``--unshare-all``),
   ``--die-with-parent``, ``--new-session``, ``--clearenv``, all capabilities
   dropped, uid/gid 65534 inside; the filesystem is an empty read-only root
   with read-only binds of only what the interpreter needs (``/usr``, the
   ``/lib*`` links, the interpreter's prefix), a fresh ``/proc`` (only the
   sandbox's own processes), a read-only minimal ``/dev`` and a size-capped
   tmpfs work directory ``/work``; no network but its own loopback;
2. runs the interpreter (``-I -S -B``) as pid 1 of the new pid namespace
   (``--as-pid-1``): when it exits, the kernel kills everything it started;
   the bootstrap below first lowers the resource limits (CPU seconds, address
   space, file size, processes, open files, no core dumps; hard limits, so the
   solution cannot raise them; where lanemon may create cgroups, the run also
   gets its own pids cgroup, :mod:`.pidlimit`, since root ignores
   RLIMIT_NPROC), then runs the solution and calls the task's
   function on each input, and prints one JSON object: the return values
   (encoded by type: a tuple is not a list, a bool is not an int), or the
   exception each call raised;
3. lanemon reads stdout/stderr with one ``select`` loop bounded in time (the
   task's wall-clock timeout) and size; on expiry or overflow it kills the
   sandbox's pid 1 (the whole namespace dies with it) and the bwrap process,
   and never waits on a pipe a leftover process could hold.

The expected answers never enter the sandbox: the scorer compares the decoded
outputs in lanemon's process, type-strictly (:mod:`.values`), so nothing the
solution does to frames, tracebacks or ``__eq__`` can forge a pass.

When bubblewrap is missing or cannot create namespaces here (checked once with
a quick probe, cached), :func:`run_function` raises :class:`SandboxUnavailable`
and code tasks are skipped -- unless ``SandboxLimits.unsafe_no_sandbox`` is set
(``--unsafe-run-code-without-sandbox``), which runs the same bootstrap as a
plain child process with the same limits and an empty environment: that is
NOT a sandbox.  See docs/QEVAL.md, "Sandbox".
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from .pidlimit import PidsCgroup

__all__ = ["SandboxLimits", "SandboxRun", "SandboxUnavailable", "run_function", "sandbox_problem",
           "UNSAFE_FLAG"]

MB = 1024 * 1024
UNSAFE_FLAG = "--unsafe-run-code-without-sandbox"
MAX_SOLUTION_CHARS = 200_000


class SandboxUnavailable(RuntimeError):
    """No working sandbox tool here (and running without one was not asked for); the message says why."""


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 10.0
    """Wall-clock limit of one solution (all its calls); the whole sandbox is killed when it expires."""
    cpu_s: int | None = None
    """RLIMIT_CPU (default: timeout rounded up + 1)."""
    address_space: int = 512 * MB
    file_size: int = 1 * MB
    work_dir_bytes: int = 16 * MB
    """Size of the tmpfs work directory (bubblewrap ``--size``, where supported)."""
    output_bytes: int = 1 * MB
    """stdout + stderr together; more is a failure ("output too large")."""
    max_processes: int = 32
    """RLIMIT_NPROC, and ``pids.max`` of the run's own pids cgroup where lanemon can make one
    (:mod:`.pidlimit`): the kernel does not enforce RLIMIT_NPROC for root."""
    open_files: int = 64
    bwrap: str | None = None
    """Path of the bubblewrap binary (default: ``bwrap`` on PATH)."""
    unsafe_no_sandbox: bool = False
    """Run code without a sandbox when none works (``--unsafe-run-code-without-sandbox``).  NOT a jail."""


class SandboxCall(msgspec.Struct):
    """One call the bootstrap makes: the argument literals (``"(1, 5), (3, 8)"``), and whether to send the
    arguments back after the call (a case that checks they were not changed)."""

    args: str
    report_args: bool = False


class CallResult(msgspec.Struct):
    """The bootstrap's answer for one call, decoded from the sandbox's output (untrusted: the solution controls
    the process that wrote it): the encoded value returned (``scorers.decode`` reads it), or the exception
    raised (the built-in classes it is an instance of, and its message); ``args`` after the call when asked."""

    value: Any | UnsetType = UNSET
    """The bootstrap's ``enc`` tree of the returned value: JSON of any shape, read by ``scorers.decode``."""
    raised: list[str] | UnsetType = UNSET
    message: str | UnsetType = UNSET
    args: Any | UnsetType = UNSET
    """The arguments after the call, as an ``enc`` tree (with ``report_args``)."""


class _Output(msgspec.Struct):
    results: list[CallResult]


class BwrapInfo(msgspec.Struct):
    """What bwrap's ``--info-fd`` says (``{"child-pid": N, ...}``): the sandbox's pid 1, if known."""

    child_pid: int | None = msgspec.field(default=None, name="child-pid")


@dataclass
class SandboxRun:
    """What one sandboxed run of a solution gave back (never the verdict: see scorers.score_code)."""

    status: str
    """``ran`` (``results`` holds one entry per call), or why not: ``syntax``, ``error`` (the solution raised
    at import), ``missing`` (no such function), ``exit``, ``timeout``, ``output`` (too large), ``crashed``,
    ``malformed`` (output that is not the bootstrap's JSON)."""
    reason: str = ""
    results: list[CallResult] = field(default_factory=list)
    seconds: float = 0.0
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    sandboxed: bool = True


# The bootstrap runs inside the sandbox.  It is public: nothing in it is a secret or a check.  Its input (the
# solution, the function name, the argument literals, the limits) arrives on stdin as JSON; its only output
# is one JSON object on the original stdout (the solution's own prints go to stderr).
BOOTSTRAP = r'''
import sys, os

def _qeval_main():
    import ast, json, resource
    task = json.loads(sys.stdin.buffer.read())
    out = os.dup(1)
    os.dup2(2, 1)
    sys.stdin.close()
    for name, value in task["limits"].items():
        which = getattr(resource, name)
        if name == "RLIMIT_CPU":
            used = resource.getrusage(resource.RUSAGE_SELF)
            value += int(used.ru_utime + used.ru_stime) + 1
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    def emit(obj):
        try:
            sys.stdout.flush()
        except BaseException:
            pass
        data = json.dumps(obj, allow_nan=False).encode()
        while data:
            data = data[os.write(out, data):]
        os._exit(0)

    def enc(v, depth=0):
        if depth > 40:
            raise ValueError("nested too deeply")
        t = type(v)
        if v is None or t is bool or t is str:
            return v
        if t is int:
            return v if -2 ** 63 < v < 2 ** 63 else {"bigint": str(v)}
        if t is float:
            return v if v == v and v not in (float("inf"), float("-inf")) else {"float": repr(v)}
        if t in (list, tuple, set, frozenset):
            return {t.__name__: [enc(x, depth + 1) for x in v]}
        if t is dict:
            return {"dict": [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in v.items()]}
        if t is bytes:
            return {"bytes": v.hex()}
        return {"object": t.__name__[:80]}

    import builtins
    real = {n: c for n, c in vars(builtins).items() if isinstance(c, type) and issubclass(c, BaseException)}

    def describe(e):  # the built-in exception classes it is an instance of (as they were before the solution)
        names = [c.__name__ for c in type(e).__mro__ if real.get(c.__name__) is c]
        return {"raised": names[:20], "message": str(e)[:300]}

    ns = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        code = compile(task["solution"], "solution.py", "exec")
    except (SyntaxError, ValueError) as e:
        emit({"error": "syntax", "detail": f"{getattr(e, 'msg', e)} (line {getattr(e, 'lineno', '?')})"})
    try:
        exec(code, ns)
    except SystemExit as e:
        emit({"error": "exit", "detail": repr(e.code)[:100]})
    except BaseException as e:
        emit({"error": "error", "detail": describe(e)})
    fn = ns.get(task["function"])
    if not callable(fn):
        emit({"error": "missing", "detail": task["function"]})
    results = []
    for call in task["calls"]:
        args = ast.literal_eval("(" + call["args"] + ",)") if call["args"].strip() else ()
        try:
            entry = {"value": enc(fn(*args))}
        except BaseException as e:
            entry = describe(e)
        if call.get("report_args"):
            try:
                entry["args"] = enc(args)
            except BaseException as e:
                entry["args"] = {"object": type(e).__name__}
        results.append(entry)
    emit({"results": results})

_qeval_main()
'''

_LIMIT_NAMES = ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_CORE", "RLIMIT_NPROC", "RLIMIT_NOFILE")


def _limit_values(limits: SandboxLimits) -> dict[str, int]:
    cpu = limits.cpu_s if limits.cpu_s is not None else int(limits.timeout_s) + 1
    return {"RLIMIT_CPU": max(1, cpu), "RLIMIT_AS": limits.address_space, "RLIMIT_FSIZE": limits.file_size,
            "RLIMIT_CORE": 0, "RLIMIT_NPROC": limits.max_processes, "RLIMIT_NOFILE": limits.open_files}


# ----------------------------------------------------------------------------- the bwrap command line


def interpreter() -> tuple[str, str]:
    """(the base interpreter's real path, its prefix): a venv's python is a link to it."""
    exe = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    return exe, os.path.realpath(sys.base_prefix)


def _bwrap_path(limits: SandboxLimits) -> str | None:
    if limits.bwrap is not None:
        return limits.bwrap if os.path.isfile(limits.bwrap) and os.access(limits.bwrap, os.X_OK) else None
    return shutil.which("bwrap")


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def bwrap_argv(bwrap: str, limits: SandboxLimits, *, size_option: bool = True) -> list[str]:
    """The bubblewrap command line that runs the interpreter on :data:`BOOTSTRAP`."""
    exe, prefix = interpreter()
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL",
            "--clearenv", "--hostname", "qeval", "--uid", "65534", "--gid", "65534",
            "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    bound = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
    for extra in (prefix, os.path.dirname(exe)):
        if extra != "/" and not any(_under(extra, b) for b in bound):  # never the whole host
            argv += ["--ro-bind", extra, extra]
            bound.append(extra)
    argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    if size_option:
        argv += ["--size", str(limits.work_dir_bytes)]
    argv += ["--tmpfs", "/work", "--chdir", "/work", "--remount-ro", "/"]
    return argv + [exe, "-I", "-S", "-B", "-c", BOOTSTRAP]


_PROBE: dict[tuple[str | None, str | None, str], str | None] = {}
_SIZE_OPTION: dict[str, bool] = {}
_PROBE_LOCK = threading.Lock()


def sandbox_problem(limits: SandboxLimits | None = None) -> str | None:
    """None when bubblewrap works here, else a one-line reason.  Probed once per bwrap path (cached)."""
    limits = limits or SandboxLimits()
    bwrap = _bwrap_path(limits)
    key = (limits.bwrap, bwrap, interpreter()[0])
    with _PROBE_LOCK:
        if key not in _PROBE:
            _PROBE[key] = _probe(bwrap, limits)
        return _PROBE[key]


def _probe(bwrap: str | None, limits: SandboxLimits) -> str | None:
    if bwrap is None:
        where = limits.bwrap or "bwrap (bubblewrap) on PATH"
        return f"no sandbox: {where} not found (Debian/Ubuntu: apt-get install bubblewrap)"
    if not sys.platform.startswith("linux"):
        return "no sandbox: bubblewrap needs Linux"
    try:
        helptext = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10, env={}).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"no sandbox: cannot run {bwrap}: {exc}"
    _SIZE_OPTION[bwrap] = b"--size" in helptext
    run = _run(bwrap, "def f(x):\n    return [x, (x,)]\n", "f", [SandboxCall("1")],
               SandboxLimits(timeout_s=10.0, bwrap=bwrap))
    if run.status == "ran" and run.results == [CallResult(value={"list": [1, {"tuple": [1]}]})]:
        return None
    detail = (run.stderr.strip().splitlines() or [run.reason or run.status])[-1][:200]
    return f"no sandbox: bubblewrap does not work here ({detail})"


# ----------------------------------------------------------------------------- running


def run_function(solution: str, function: str, calls: list[SandboxCall],
                 limits: SandboxLimits | None = None) -> SandboxRun:
    """Run ``solution`` in the sandbox and call ``function`` on each call's ``args`` (a Python literal list).

    ``calls``: ``[SandboxCall("(1, 5), (3, 8)"), ...]``.  Raises
    :class:`SandboxUnavailable` when no sandbox works (unless ``limits.unsafe_no_sandbox``); never raises for
    bad code.
    """
    limits = limits or SandboxLimits()
    problem = sandbox_problem(limits)
    if len(solution) > MAX_SOLUTION_CHARS:
        return SandboxRun("malformed", f"solution too long ({len(solution)} characters)", sandboxed=problem is None)
    if problem is None:
        return _run(_bwrap_path(limits), solution, function, calls, limits)
    if limits.unsafe_no_sandbox:
        return _run(None, solution, function, calls, limits)
    raise SandboxUnavailable(problem)


def _run(bwrap: str | None, solution: str, function: str, calls: list[SandboxCall],
         limits: SandboxLimits) -> SandboxRun:
    task = {"solution": solution, "function": function, "calls": calls, "limits": _limit_values(limits)}
    start = time.monotonic()
    deadline = start + limits.timeout_s
    workdir = None
    cgroup = PidsCgroup(limits.max_processes)
    fds: dict[str, int] = {}
    with tempfile.TemporaryFile() as payload:
        payload.write(msgspec.json.encode(task))
        payload.flush()
        payload.seek(0)
        if bwrap is not None:
            fds["info_r"], fds["info_w"] = os.pipe()
            extra = ["--info-fd", str(fds["info_w"])]
            if cgroup.create():  # bwrap holds the sandbox before exec until it is in the cgroup
                fds["block_r"], fds["block_w"] = os.pipe()
                extra += ["--block-fd", str(fds["block_r"])]
            argv = bwrap_argv(bwrap, limits, size_option=_SIZE_OPTION.get(bwrap, False))
            argv = argv[:1] + extra + argv[1:]
            cwd, pass_fds = "/", tuple(fds[k] for k in ("info_w", "block_r") if k in fds)
        else:  # --unsafe-run-code-without-sandbox: a plain child, same bootstrap, same limits
            workdir = tempfile.mkdtemp(prefix="lanemon-qeval-")
            argv = [interpreter()[0], "-I", "-S", "-B", "-c", BOOTSTRAP]
            cwd, pass_fds = workdir, ()
        try:
            proc = subprocess.Popen(argv, stdin=payload, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={},
                                    cwd=cwd, start_new_session=True, close_fds=True, pass_fds=pass_fds)
        except OSError as exc:
            _close(fds, *fds)
            cgroup.remove()
            if workdir:
                shutil.rmtree(workdir, ignore_errors=True)
            return SandboxRun("crashed", f"could not start the sandbox: {exc}", seconds=time.monotonic() - start,
                              sandboxed=bwrap is not None)
    _close(fds, "info_w", "block_r")
    try:
        info = _read_info(fds.get("info_r", -1), min(deadline, time.monotonic() + 5.0))
        if "block_w" in fds:
            child = info.child_pid
            if child is not None and child > 1:
                cgroup.add(child)
            try:
                os.write(fds["block_w"], b"go")
            except OSError:
                pass
            _close(fds, "block_w")
        out, err, ended = _collect(proc, deadline, limits.output_bytes)
        if ended != "eof":
            _kill(proc, info)
        rc = _reap(proc, deadline if ended == "eof" else time.monotonic() + 2.0)
        if rc is None:  # pipes closed, process still running: the timeout applies
            ended = "timeout"
            _kill(proc, info)
            rc = _reap(proc, time.monotonic() + 2.0)
        if bwrap is None:
            _kill(proc, BwrapInfo())  # no sandbox: at least whatever the child left in its process group
    finally:
        for f in (proc.stdout, proc.stderr):
            try:
                f.close()
            except OSError:
                pass
        _close(fds, *list(fds))
        cgroup.remove()
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    run = SandboxRun("", seconds=time.monotonic() - start, returncode=rc,
                     stdout=out[-4000:].decode("utf-8", "replace"), stderr=err[-4000:].decode("utf-8", "replace"),
                     sandboxed=bwrap is not None)
    if ended == "overflow":
        run.status, run.reason = "output", f"output too large (more than {_fmt_bytes(limits.output_bytes)})"
    elif ended == "timeout":
        run.status, run.reason = "timeout", f"timeout after {limits.timeout_s:g} s"
    else:
        _parse(run, out, limits)
    return run


def _close(fds: dict[str, int], *names: str) -> None:
    for name in names:
        fd = fds.pop(name, None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


def _read_info(fd: int, deadline: float) -> BwrapInfo:
    """bwrap's ``--info-fd`` JSON (``{"child-pid": N, ...}``): read until it parses, EOF or the deadline."""
    if fd < 0:
        return BwrapInfo()
    buf = bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while len(buf) < 4096:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                break
            try:
                chunk = os.read(fd, 4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            try:
                return _info_decoder.decode(bytes(buf))
            except msgspec.ValidationError:  # JSON, but not bwrap's object
                return BwrapInfo()
            except msgspec.DecodeError:  # not all of it yet
                continue
    return BwrapInfo()


_info_decoder = msgspec.json.Decoder(BwrapInfo)


def _collect(proc: subprocess.Popen, deadline: float, cap: int) -> tuple[bytes, bytes, str]:
    """Read stdout and stderr until EOF on both, the deadline, or ``cap`` bytes in all: (out, err, how it ended)."""
    bufs = {"out": bytearray(), "err": bytearray()}
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout.fileno(), selectors.EVENT_READ, "out")
    sel.register(proc.stderr.fileno(), selectors.EVENT_READ, "err")
    open_outputs, total, ended = 2, 0, "eof"
    try:
        while open_outputs and ended == "eof":
            left = deadline - time.monotonic()
            if left <= 0:
                ended = "timeout"
                break
            for key, _ in sel.select(min(left, 0.5)):
                try:
                    chunk = os.read(key.fd, 65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    sel.unregister(key.fd)
                    open_outputs -= 1
                    continue
                total += len(chunk)
                if total > cap:
                    ended = "overflow"
                    break
                bufs[key.data] += chunk
    finally:
        sel.close()
    return bytes(bufs["out"]), bytes(bufs["err"]), ended


def _kill(proc: subprocess.Popen, info: BwrapInfo) -> None:
    """Kill the sandbox and return once nothing of it is left running.

    Its pid 1 first: the kernel then kills every process of the pid namespace before pid 1 is gone, and bwrap
    (which waits for it) exits; then bwrap's process group, in case bwrap itself did not exit.  Without a pid
    1 (no bwrap: ``--unsafe-run-code-without-sandbox``), the child's process group only.
    """
    child = info.child_pid
    if child is not None and child > 1:
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        else:
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(proc: subprocess.Popen, until: float) -> int | None:
    try:
        return proc.wait(timeout=max(0.0, until - time.monotonic()))
    except subprocess.TimeoutExpired:
        return None


def _fmt_bytes(n: int) -> str:
    return f"{n // MB} MB" if n >= MB and n % MB == 0 else f"{n} bytes"


def _parse(run: SandboxRun, out: bytes, limits: SandboxLimits) -> None:
    """Fill ``run`` from the bootstrap's JSON (untrusted: the solution controls the process that wrote it)."""
    try:
        obj = json.loads(out.decode("utf-8")) if out.strip() else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        run.status, run.reason = "malformed", "the sandbox's output is not the expected JSON"
        return
    if obj is None:
        run.status, run.reason = "crashed", _crash_reason(run.returncode, run.stderr, limits)
        return
    if not isinstance(obj, dict):
        run.status, run.reason = "malformed", "the sandbox's output is not the expected JSON"
        return
    if "error" in obj:
        kind, detail = obj.get("error"), obj.get("detail")
        if kind == "syntax" and isinstance(detail, str):
            run.status, run.reason = "syntax", f"syntax error: {detail[:300]}"
        elif kind == "exit":
            run.status, run.reason = "exit", f"the solution called exit({str(detail)[:100]})"
        elif kind == "missing":
            run.status, run.reason = "missing", "the solution does not define the function"
        elif kind == "error" and isinstance(raised := _call_result(detail), CallResult):
            run.status, run.reason = "error", f"solution raised {raised_text(raised, limits)}"
        else:
            run.status, run.reason = "malformed", "the sandbox's output is not the expected JSON"
        return
    try:
        results = msgspec.convert(obj, _Output).results
    except msgspec.ValidationError:
        run.status, run.reason = "malformed", "the sandbox's output is not the expected JSON"
        return
    run.status, run.results = "ran", results


def _call_result(obj: object) -> CallResult | None:
    try:
        return msgspec.convert(obj, CallResult)
    except msgspec.ValidationError:
        return None


def raised_text(entry: CallResult, limits: SandboxLimits | None = None) -> str:
    """``"ValueError: bad size"`` from a call result that raised (``raised``: the class names, ``message``)."""
    names = entry.raised
    name = names[0] if names else "an exception"
    if name == "MemoryError":
        return f"MemoryError (memory limit {_fmt_bytes((limits or SandboxLimits()).address_space)})"
    msg = entry.message.replace("\n", " ")[:200] if entry.message else ""
    return f"{name[:80]}: {msg}" if msg else name[:80]


def _crash_reason(rc: int | None, err: str, limits: SandboxLimits) -> str:
    sig = None
    if rc is not None and rc < 0:
        sig = -rc
    elif rc is not None and rc > 128:  # bwrap exits with 128 + the signal that killed its child
        sig = rc - 128
    if sig is not None:
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
