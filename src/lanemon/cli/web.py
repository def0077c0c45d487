"""`lanemon web`: the dashboard in a browser, served by textual-serve.

``lanemon web [--host 127.0.0.1] [--port 8000] [-- COMMAND ARGS...]`` serves
``lanemon COMMAND ARGS...`` (default: ``lanemon live``): every browser tab
that opens the page starts its own copy of that command in a pseudo-terminal
on this machine and shows it with xterm.js.  The default bind address is loopback; binding
elsewhere prints a warning.

Not an open door (cli/web_guard.py): the URL printed carries a session token (``?token=``, as
notebook servers do; ``--no-token`` drops it); a request under another ``Host`` (DNS rebinding) or
from a page of another ``Origin`` is refused before any session starts; at most ``--max-sessions``
tabs run at once.

Offline by construction: textual-serve's page asks a web-font service for its
font, although the font files ship in its own static folder.  lanemon serves a
copy of that page (rewritten when the server starts, into lanemon's cache dir)
whose ``@font-face`` points at those local files, and refuses to serve a page
that would still load anything from another host.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import secrets
import shlex
import socket
import sys
from pathlib import Path

from lanemon.cli.common import UsageError, err
from lanemon.untrusted import inert

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be a number, not {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError("port must be between 1 and 65535")
    return port


def _sessions(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--max-sessions must be a number, not {text!r}") from None
    if not 1 <= n <= 64:
        raise argparse.ArgumentTypeError("--max-sessions must be between 1 and 64")
    return n


def bind_problem(host: str, port: int) -> str | None:
    """Why this server could not listen on *host*:*port* (a name that does not resolve, an address not on this
    machine, a port in use), or None: tried before anything is printed, so it is one line and exit 2 rather than
    "serving ..." and then a traceback."""
    if not host.strip():
        return "the bind address is empty (0.0.0.0 serves every interface)"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    family, kind, proto, _, address = infos[0]
    try:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds
            sock.bind(address)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def served_command(args: list[str]) -> str:
    """The shell command each browser session runs: this Python, this lanemon."""
    args = list(args)
    if args and args[0] == "--":
        args = args[1:]
    if args and args[0] == "web":
        raise UsageError("lanemon web cannot serve itself; give the command to serve, e.g. `lanemon web -- demo`")
    return shlex.join([sys.executable, "-m", "lanemon", *(args or ["live"])])


_REMOTE_LINK = re.compile(r"<link\b[^>]*\bhref=\"https?://[^\"]*\"[^>]*>", re.S)
_REMOTE_URL = re.compile(r"(?:src|href|url)\s*[=(]\s*[\"']?https?://", re.I)
LOCAL_FONTS = """<style>
      @font-face { font-family: "Roboto Mono"; font-style: normal;
        src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype"); }
      @font-face { font-family: "Roboto Mono"; font-style: italic;
        src: url("{{ config.static.url }}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype"); }
    </style>"""


def offline_page(html: str) -> str:
    """textual-serve's page with every stylesheet from another host replaced by the local fonts (pure).

    Raises UsageError if anything would still be fetched from another host."""
    out = _REMOTE_LINK.sub(LOCAL_FONTS, html)
    if _REMOTE_URL.search(out):
        raise UsageError("lanemon web: textual-serve's page loads something from another host; refusing to serve "
                         "it (this lanemon does not know this textual-serve version's page)")
    return out


def offline_templates(dest: Path) -> Path:
    """Write textual-serve's templates, made offline, into ``dest``; returns it."""
    import textual_serve

    src = Path(textual_serve.__file__).parent / "templates"
    dest.mkdir(parents=True, exist_ok=True)
    for f in src.glob("*.html"):
        (dest / f.name).write_text(offline_page(f.read_text(encoding="utf-8")), encoding="utf-8")
    return dest


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "web", help="serve the dashboard to a web browser (textual-serve)",
        description="Serve `lanemon COMMAND ...` to web browsers: open http://HOST:PORT/ and every tab runs its "
                    "own copy of the command on this machine. Put the command after `--`, e.g. "
                    "`lanemon web -- demo` or `lanemon web --port 8080 -- replay rec.jsonl --speed 4` "
                    "(default: `live`). Open the URL it prints: it carries the session's token. Requests under "
                    "another Host or from another site's page are refused; loopback only unless you pass --host.",
    )
    p.add_argument("--host", default=DEFAULT_HOST, help=f"bind address (default {DEFAULT_HOST})")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    p.add_argument("--title", default="lanemon", help="browser tab title (default lanemon)")
    p.add_argument("--max-sessions", type=_sessions, default=4, metavar="N",
                   help="browser tabs (each runs its own lanemon process) at once; more are refused (default 4)")
    p.add_argument("--no-token", action="store_true",
                   help="serve without the token in the URL (anyone who can reach the port and loads the page "
                        "from this server's own address gets a session)")
    p.add_argument("served", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="the lanemon command to serve and its options (default: live)")
    p.set_defaults(func=cmd_web)


def cmd_web(args: argparse.Namespace) -> int:
    try:
        from textual_serve.server import Server  # noqa: F401 - the package is there
    except ImportError:
        raise UsageError(
            "lanemon web needs the textual-serve package, which is not installed here: "
            "pip install 'textual-serve>=1.1' (it is a dependency of lanemon; reinstall lanemon)"
        ) from None
    command = served_command(args.served)
    from platformdirs import user_cache_dir

    from lanemon.cli.web_guard import Doors, GuardedServer

    cache = Path(user_cache_dir("lanemon")) / "web-templates"
    try:  # before anything is printed: a read-only or missing cache dir is one line and exit 2
        templates = offline_templates(cache)
    except OSError as exc:
        raise UsageError(f"lanemon web: cannot write its page into {cache} ({exc.strerror or exc}); "
                         "set XDG_CACHE_HOME to a writable directory") from None
    why = bind_problem(args.host, args.port)
    if why is not None:
        raise UsageError(f"lanemon web: cannot serve on {inert(args.host)[:80]}:{args.port}: {why}")
    if not is_loopback(args.host):
        err(f"warning: serving on {args.host}: anyone who can reach this port "
            + ("gets a lanemon session, with no login" if args.no_token else "and has the URL gets a lanemon session"))
    token = None if args.no_token else secrets.token_urlsafe(24)
    url_host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{url_host}:{args.port}/" + (f"?token={token}" if token else "")
    print(f"lanemon web: serving `{shlex.join(['lanemon', *shlex.split(command)[3:]])}` "
          f"on {url} (Ctrl-C stops)", file=sys.stderr, flush=True)
    doors = Doors(args.host, args.port, token, max_sessions=args.max_sessions)
    server = GuardedServer(command, doors=doors, host=args.host, port=args.port, title=args.title,
                           templates_path=templates)
    server.serve()
    return 0
