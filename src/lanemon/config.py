"""Lane configuration: ``lanes.toml`` + ``--lane NAME=URL`` + environment.

Example ``lanes.toml`` (in the XDG config dir, or ``--config PATH``)::

    [probe]
    interval = 5.0          # seconds between probe requests per lane
    max_tokens = 32
    prompt = "Write one sentence about the sea."

    [lanes.A]
    url = "http://127.0.0.1:8001/v1"
    model = "deepseek-v4.1-flash"      # optional: default is the first of /v1/models
    api_key_env = "LANE_A_KEY"         # optional: the NAME of an env var, never the key
    headers = { "X-Team" = "serving" } # optional extra headers
    timeout = 600                      # optional: seconds without progress (a data line) before a request
                                       # fails as stalled; keep-alive comments do not count
    deadline = 1800                    # optional: seconds a whole request may take
    telemetry = "http://10.0.0.5:9400/metrics"  # optional: the lane's GPUs (dcgm-exporter), or "nvml" (docs/GPU.md)
    cost_per_hour = 3.5                # optional: USD per hour for the lane's GPUs ($/1M output tokens)
    [lanes.A.defaults]                  # optional per-lane request defaults
    temperature = 0

Errors raise :class:`ConfigError` with a one-line message naming the field;
the CLI prints it and exits with code 2.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

APP_NAME = "lanemon"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")

LANE_KEYS = {"url", "model", "api_key_env", "headers", "defaults", "timeout", "deadline", "telemetry", "cost_per_hour"}
MAX_COST_PER_HOUR = 100_000.0
"""The most a lane's GPUs may cost per hour (USD): far above any rental price, so a larger figure is a typo."""
DEFAULT_TIMEOUT = 600.0
"""Seconds a request may go without progress (no byte, or only keep-alive comments) before it fails."""
DEFAULT_DEADLINE = 1800.0
"""Seconds a whole request may take: a two-minute 300K-token prefill plus a long answer fit."""
PROBE_KEYS = {"interval", "max_tokens", "prompt", "endpoint", "enabled"}
TOP_KEYS = {"lanes", "probe", "theme", "record", "slo", "alerts", "exporter"}
SLO_KEYS = ("ttft", "tpot", "e2e")
ALERT_KEYS = {"when", "for", "lanes", "severity", "name", "command"}
ALERT_SEVERITIES = ("info", "warning", "critical")
EXPORTER_KEYS = {"listen"}
MAX_ALERTS = 64
MAX_SLO_S = 86400.0

MAX_SECONDS = 30 * 86400.0
"""The longest duration any setting may name (30 days): past it a timer is a typo, and far past it asyncio's
``call_later`` overflows."""
MAX_TOKENS = 10_000_000
"""The largest token count any setting may name (the longest contexts served are a few million)."""
MAX_CONFIG_BYTES = 1 << 20
"""A config, theme or prompt-set TOML file larger than this is refused unread (1 MiB)."""
MAX_NESTING = 16
"""Deepest nesting of tables and arrays a setting may have (``defaults`` is sent in every request body)."""
MAX_HEADERS, MAX_HEADER_NAME, MAX_HEADER_VALUE = 64, 128, 8192
"""Extra request headers: how many, and the longest name and value (bytes), per lane."""
_TCHAR = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_FIELD_VCHAR = re.compile(r"^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$")
RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade",
                              "te", "trailer", "proxy-connection", "content-encoding", "accept-encoding"})
"""Headers lanemon's HTTP client sets itself (framing, connection, encodings): a config may not override them."""


if TYPE_CHECKING:
    from lanemon.public_lane import PublicLane


class ConfigError(ValueError):
    """A configuration problem, with a message fit for one line on stderr."""


@dataclass(frozen=True)
class LaneConfig:
    name: str
    url: str
    model: str | None = None
    api_key_env: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    """Stall window: seconds without progress (a data line of the stream) before the request fails."""
    deadline: float = DEFAULT_DEADLINE
    """Seconds a whole request (or a non-streaming call) may take, however the server keeps it alive."""
    telemetry: str | None = None
    """Where the lane's GPUs report: a dcgm-exporter ``/metrics`` URL or ``"nvml"`` (docs/GPU.md)."""
    cost_per_hour: float | None = None
    """USD per hour for the lane's GPUs: turns tokens per second into USD per 1M output tokens."""

    def api_key(self) -> str | None:
        """The key from the environment variable named in the config (never stored)."""
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env) or None

    def shown(self, model: str | None = None) -> PublicLane:
        """This lane as sources show it; ``model``: the one its client detected (else the configured one)."""
        from lanemon.public_lane import PublicLane

        return PublicLane(self.name, public_url(self.url), model or self.model)

    def public(self) -> dict[str, Any]:
        """What may be written to recordings and shown to viewers: no keys, no headers,
        no ``user:password@`` in the URL."""
        out = {"name": self.name, "url": public_url(self.url), "model": self.model}
        if self.telemetry is not None:  # where the GPUs report, without credentials or query
            out["telemetry"] = self.telemetry if self.telemetry == "nvml" else public_url(self.telemetry)
        if self.cost_per_hour is not None:
            out["cost_per_hour"] = self.cost_per_hour
        return out


@dataclass(frozen=True)
class ProbeConfig:
    interval: float = 5.0
    max_tokens: int = 32
    prompt: str = "In one sentence, describe what a load balancer does."
    endpoint: str = "chat"
    enabled: bool = True


@dataclass(frozen=True)
class AlertConfig:
    """One ``[[alerts]]`` table; ``when`` is parsed by measure/alerts.py (the CLI names the field on error)."""

    when: str
    for_s: float | None = None
    lanes: tuple[str, ...] | None = None
    severity: str = "warning"
    name: str = ""
    command: tuple[str, ...] | None = None
    where: str = "alerts"


@dataclass(frozen=True)
class Config:
    lanes: tuple[LaneConfig, ...] = ()
    probe: ProbeConfig = ProbeConfig()
    theme: str | None = None
    record: bool = True
    path: Path | None = None
    slo: dict[str, float] = field(default_factory=dict)
    """``[slo]``: targets in seconds (ttft, tpot, e2e)."""
    alerts: tuple[AlertConfig, ...] = ()
    exporter_listen: tuple[str, int] | None = None
    """``[exporter] listen = "HOST:PORT"``."""


def config_dir() -> Path:
    import platformdirs  # here: `lanemon --help` needs no directories

    return Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME))


def default_config_path() -> Path:
    return config_dir() / "lanes.toml"


# ------------------------------------------------------------------ value checks (reuse these for new fields)
def check_number(value: Any, where: str, *, lo: float | None = None, hi: float | None = None,
                 lo_open: bool = False, integer: bool = False, unit: str = "", shown: str | None = None
                 ) -> float | int:
    """*value* as a finite number within ``[lo, hi]`` (``(lo, hi]`` with *lo_open*); a whole number with
    *integer*.  Anything else (a string, a bool, NaN, ±inf, out of range) is a one-line ConfigError naming
    *where*, e.g. ``lanes.A.timeout: must be a number of seconds in (0, 2592000], not nan`` (*shown*: how to
    quote the value, e.g. a flag's own text).

    The one rule for every number lanemon reads from a file or a flag (the CLI's ``number_arg`` uses it too).
    """
    what = ("a whole number" if integer else "a number") + (f" of {unit}" if unit else "")
    if lo is not None or hi is not None:
        left = "(" if lo_open else "["
        what += f" in {left}{_num(lo) if lo is not None else '-inf'}, {_num(hi) if hi is not None else 'inf'}]"
    ok = not isinstance(value, bool) and isinstance(value, (int, float))
    if ok and integer and isinstance(value, float):
        ok = math.isfinite(value) and value.is_integer()
        if ok:
            value = int(value)
    if ok and isinstance(value, float) and not math.isfinite(value):
        ok = False
    if ok and lo is not None and (value <= lo if lo_open else value < lo):
        ok = False
    if ok and hi is not None and value > hi:
        ok = False
    if not ok:
        raise ConfigError(f"{where}: must be {what}, not {shown if shown is not None else _shown_value(value)}")
    return int(value) if integer else float(value)


def number_field(table: dict[str, Any], key: str, where: str, default: Any, **limits: Any) -> Any:
    """``table[key]`` checked with :func:`check_number` (``where.key`` named), or *default* when absent."""
    if key not in table:
        return default
    return check_number(table[key], f"{where}.{key}", **limits)


def seconds_field(table: dict[str, Any], key: str, where: str, default: float, *,
                  hi: float = MAX_SECONDS) -> float:
    """A positive, finite duration in seconds (at most *hi*), or *default*."""
    return number_field(table, key, where, default, lo=0, lo_open=True, hi=hi, unit="seconds")


def check_headers(value: Any, where: str) -> dict[str, str]:
    """Extra HTTP request headers, per RFC 9110: each name a token, each value visible US-ASCII characters,
    spaces and tabs inside (no CR/LF/NUL, no leading or trailing blank, no non-ASCII: the RFC leaves
    octets above 0x7F to legacy fields, and a header lanemon cannot send as written is refused, not
    re-encoded), bounded in count and length, and none of the headers lanemon's client sets itself.
    One-line ConfigError naming ``where["Name"]``."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a table of header names to strings")
    if len(value) > MAX_HEADERS:
        raise ConfigError(f"{where}: {len(value)} headers, at most {MAX_HEADERS}")
    out: dict[str, str] = {}
    for name, text in value.items():
        shown = _shown_value(name, 40)
        if not isinstance(name, str) or len(name) > MAX_HEADER_NAME or not _TCHAR.match(name):
            raise ConfigError(f"{where}: header name {shown} is not an HTTP token (letters, digits and "
                              f"!#$%&'*+-.^_`|~, at most {MAX_HEADER_NAME})")
        if name.lower() in RESERVED_HEADERS:
            raise ConfigError(f"{where}: header {name!r} is set by lanemon itself and cannot be overridden")
        field_where = f"{where}[{name!r}]"
        if not isinstance(text, str):
            raise ConfigError(f"{field_where}: must be a string")
        if len(text) > MAX_HEADER_VALUE:
            raise ConfigError(f"{field_where}: {len(text):,} characters, at most {MAX_HEADER_VALUE:,}")
        if text and not _FIELD_VCHAR.match(text):
            bad = next((c for c in text if not (0x20 <= ord(c) < 0x7F or c == "\t")), None)
            why = (f"contains {bad!r} (U+{ord(bad):04X}): header values must be visible US-ASCII "
                   "(RFC 9110 5.5); percent-encode or base64 it as the server expects") if bad is not None else \
                "has leading or trailing whitespace"
            raise ConfigError(f"{field_where}: {why}")
        out[name] = text
    return out


def check_nesting(value: Any, where: str, *, depth: int = MAX_NESTING, finite: bool = True) -> Any:
    """*value* (a TOML value) when nested at most *depth* tables/arrays deep and (*finite*) every number in it
    finite;
    one-line ConfigError naming *where* otherwise.  Iterative: a hostile depth cannot overflow the stack."""
    stack: list[tuple[Any, int, str]] = [(value, 0, where)]
    while stack:
        item, level, path = stack.pop()
        if isinstance(item, (dict, list)):
            if level >= depth:
                raise ConfigError(f"{path}: nested more than {depth} tables/arrays deep")
            children = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((v, level + 1, f"{path}.{k}" if isinstance(item, dict) else f"{path}[{k}]")
                         for k, v in children)
        elif finite and isinstance(item, float) and not math.isfinite(item):
            raise ConfigError(f"{path}: must be a finite number, not {item}")
    return value


def _num(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) and not float(x).is_integer() else f"{int(x)}"


def _shown_value(value: Any, limit: int = 60) -> str:
    if isinstance(value, str):
        from lanemon.untrusted import inert

        return repr(inert(value, limit))
    if isinstance(value, (dict, list)):
        return "a table" if isinstance(value, dict) else "an array"
    return str(value)[:limit]


def public_url(url: str) -> str:
    """``url`` without credentials (``user:password@``), query or fragment: the form that is recorded,
    shown, shared and quoted in error messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(invalid URL)"
    host = parts.netloc.rsplit("@", 1)[-1]
    return parts._replace(netloc=host, query="", fragment="").geturl()


def endpoint_url(base: str, path: str) -> str:
    """``base`` (a lane URL, perhaps with a query such as ``?api-version=...``) with ``path`` appended
    to its path, the query kept after it."""
    parts = urlsplit(base)
    if not parts.query and not parts.fragment:
        return base + path
    return parts._replace(path=parts.path.rstrip("/") + path, fragment="").geturl()


def _shown(url: str) -> str:
    from lanemon.untrusted import PUBLIC, inert

    return PUBLIC.redact(inert(url, 200))


def validate_url(url: str, where: str) -> str:
    if not isinstance(url, str) or not url:
        raise ConfigError(f"{where}: url must be a non-empty string")
    if len(url) > 2048 or any(ord(c) <= 0x20 or 0x7F <= ord(c) <= 0x9F for c in url):
        raise ConfigError(f"{where}: url {_shown(url)!r} must be at most 2,048 characters without spaces or control "
                          "characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where}: url {_shown(url)!r} is not an http(s) URL like http://127.0.0.1:8001/v1")
    try:
        parts.port
    except ValueError:
        raise ConfigError(f"{where}: url {_shown(url)!r} has an invalid port") from None
    parts = parts._replace(path=parts.path.rstrip("/"))
    return parts.geturl() if (parts.query or parts.fragment) else url.rstrip("/")


def validate_name(name: str, where: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ConfigError(f"{where}: lane name {name!r} must be 1-32 letters, digits, '_', '.' or '-'")
    return name


def _check_keys(table: dict, allowed: set[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r} (allowed: {', '.join(sorted(allowed))})")


def _lane_from_table(name: str, table: Any, where: str) -> LaneConfig:
    validate_name(name, where)
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    _check_keys(table, LANE_KEYS, where)
    url = validate_url(table.get("url", ""), f"{where}.url")
    model = table.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"{where}.model: must be a string")
    key_env = table.get("api_key_env")
    if key_env is not None and (not isinstance(key_env, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key_env)):
        raise ConfigError(f"{where}.api_key_env: must be the name of an environment variable, not a key")
    headers = check_headers(table.get("headers", {}), f"{where}.headers")
    defaults = table.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ConfigError(f"{where}.defaults: must be a table")
    check_nesting(defaults, f"{where}.defaults")
    timeout = seconds_field(table, "timeout", where, DEFAULT_TIMEOUT)
    deadline = seconds_field(table, "deadline", where, DEFAULT_DEADLINE)
    telemetry = validate_telemetry(table["telemetry"], f"{where}.telemetry") if "telemetry" in table else None
    cost = validate_cost(table["cost_per_hour"], f"{where}.cost_per_hour") if "cost_per_hour" in table else None
    return LaneConfig(name, url, model, key_env, headers, dict(defaults), timeout, deadline, telemetry, cost)


def validate_telemetry(value: Any, where: str) -> str:
    """``"nvml"`` or an http(s) URL of a dcgm-exporter ``/metrics`` (kept as given)."""
    if value == "nvml":
        return "nvml"
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: must be \"nvml\" or a dcgm-exporter URL like http://host:9400/metrics")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where}: {_shown(value)!r} is not \"nvml\" or an http(s) URL like "
                          "http://host:9400/metrics")
    try:
        parts.port
    except ValueError:
        raise ConfigError(f"{where}: {_shown(value)!r} has an invalid port") from None
    return value


def validate_cost(value: Any, where: str) -> float:
    """A finite number of USD per hour in [0, MAX_COST_PER_HOUR]."""
    return check_number(value, where, lo=0, hi=MAX_COST_PER_HOUR, unit="USD per hour")


def _named_arg(text: str, flag: str, example: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise ConfigError(f"{flag} {_shown(text)!r}: expected NAME={example}")
    return validate_name(name.strip(), flag), value.strip()


def apply_lane_extras(config: "Config", telemetry: list[str] | None = None, cost: list[str] | None = None) -> "Config":
    """``--telemetry NAME=URL|nvml`` and ``--cost NAME=USD_PER_HOUR`` over the lanes (a name that is not a
    lane is an error: a typo must not silently measure nothing)."""
    import dataclasses

    lanes = {lane.name: lane for lane in config.lanes}
    for arg in telemetry or ():
        name, value = _named_arg(arg, "--telemetry", "http://host:9400/metrics (or NAME=nvml)")
        if name not in lanes:
            raise ConfigError(f"--telemetry {name}: no lane named {name!r}")
        lanes[name] = dataclasses.replace(lanes[name], telemetry=validate_telemetry(value, f"--telemetry {name}"))
    for arg in cost or ():
        name, value = _named_arg(arg, "--cost", "USD_PER_HOUR, e.g. A=3.5")
        if name not in lanes:
            raise ConfigError(f"--cost {name}: no lane named {name!r}")
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(f"--cost {name}: {_shown(value)!r} is not a number of USD per hour") from None
        lanes[name] = dataclasses.replace(lanes[name], cost_per_hour=validate_cost(number, f"--cost {name}"))
    return dataclasses.replace(config, lanes=tuple(lanes.values()))


def _probe_from_table(table: Any) -> ProbeConfig:
    where = "probe"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    _check_keys(table, PROBE_KEYS, where)
    base = ProbeConfig()
    interval = seconds_field(table, "interval", where, base.interval, hi=86400.0)
    max_tokens = number_field(table, "max_tokens", where, base.max_tokens, lo=1, hi=MAX_TOKENS, integer=True)
    prompt = table.get("prompt", base.prompt)
    if not isinstance(prompt, str) or not prompt:
        raise ConfigError("probe.prompt: must be a non-empty string")
    if len(prompt) > MAX_CONFIG_BYTES:
        raise ConfigError(f"probe.prompt: {len(prompt):,} characters, at most {MAX_CONFIG_BYTES:,}")
    endpoint = table.get("endpoint", base.endpoint)
    if endpoint not in ("chat", "completions"):
        raise ConfigError("probe.endpoint: must be 'chat' or 'completions'")
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError("probe.enabled: must be true or false")
    return ProbeConfig(interval, max_tokens, prompt, endpoint, enabled)


def parse_config(data: dict[str, Any], path: Path | None = None) -> Config:
    _check_keys(data, TOP_KEYS, str(path) if path else "config")
    lanes_table = data.get("lanes", {})
    if not isinstance(lanes_table, dict):
        raise ConfigError("lanes: must be a table of [lanes.NAME] tables")
    lanes = tuple(_lane_from_table(name, t, f"lanes.{name}") for name, t in lanes_table.items())
    probe = _probe_from_table(data.get("probe", {}))
    theme = data.get("theme")
    if theme is not None and not isinstance(theme, str):
        raise ConfigError("theme: must be a theme name")
    record = data.get("record", True)
    if not isinstance(record, bool):
        raise ConfigError("record: must be true or false")
    return Config(lanes=lanes, probe=probe, theme=theme, record=record, path=path,
                  slo=_slo_from_table(data.get("slo", {})), alerts=_alerts_from_array(data.get("alerts", [])),
                  exporter_listen=_exporter_from_table(data.get("exporter", {})))


def _seconds_value(value: Any, where: str, *, lo_open: bool = True, hi: float = MAX_SLO_S) -> float:
    """Seconds in (0, hi] (``[0, hi]`` without *lo_open*): :func:`check_number`, the one rule for numbers."""
    return check_number(value, where, lo=0, lo_open=lo_open, hi=hi, unit="seconds")


def _slo_from_table(table: Any) -> dict[str, float]:
    if not isinstance(table, dict):
        raise ConfigError("slo: must be a table like [slo] ttft = 0.5")
    _check_keys(table, set(SLO_KEYS), "slo")
    return {key: _seconds_value(table[key], f"slo.{key}") for key in SLO_KEYS if key in table}


def _alerts_from_array(items: Any) -> tuple[AlertConfig, ...]:
    if not isinstance(items, list):
        raise ConfigError("alerts: must be an array of [[alerts]] tables")
    if len(items) > MAX_ALERTS:
        raise ConfigError(f"alerts: at most {MAX_ALERTS} rules")
    out = []
    for i, table in enumerate(items):
        where = f"alerts[{i}]"
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: must be a table")
        _check_keys(table, ALERT_KEYS, where)
        when = table.get("when")
        if not isinstance(when, str) or not when.strip():
            raise ConfigError(f"{where}.when: must be a rule like \"ttft_p50 > 0.5\"")
        for_s = None
        if "for" in table:
            raw = table["for"]
            if isinstance(raw, str):
                for_s = _duration_text(raw, f"{where}.for")
            else:
                for_s = _seconds_value(raw, f"{where}.for", lo_open=False, hi=MAX_SECONDS)
        lanes = table.get("lanes")
        if lanes is not None:
            if not isinstance(lanes, list) or not lanes:
                raise ConfigError(f"{where}.lanes: must be a non-empty list of lane names")
            lanes = tuple(validate_name(n, f"{where}.lanes") for n in lanes)
        severity = table.get("severity", "warning")
        if severity not in ALERT_SEVERITIES:
            raise ConfigError(f"{where}.severity: must be one of {', '.join(ALERT_SEVERITIES)}, not {severity!r}")
        name = table.get("name", "")
        if not isinstance(name, str) or len(name) > 80:
            raise ConfigError(f"{where}.name: must be a string of at most 80 characters")
        command = table.get("command")
        if command is not None:
            if (not isinstance(command, list) or not command or len(command) > 64
                    or not all(isinstance(a, str) and a and len(a) <= 4096 and "\x00" not in a for a in command)):
                raise ConfigError(f"{where}.command: must be a non-empty argv list of strings, e.g. "
                                  "[\"notify-send\", \"lanemon\"] (run without a shell)")
            command = tuple(command)
        out.append(AlertConfig(when, for_s, lanes, severity, name, command, where))
    return tuple(out)


def _duration_text(text: str, where: str) -> float:
    """``"60s"``, ``"500ms"``, ``"5m"``, ``"1h"`` or ``"30"`` -> seconds (0 .. 30 days)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?\s*", text)
    if m is None:
        raise ConfigError(f"{where}: {text!r} is not a duration like \"60s\", \"500ms\", \"5m\"")
    value = float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}[m.group(2)]
    return _seconds_value(value, where, lo_open=False, hi=MAX_SECONDS)


def _exporter_from_table(table: Any) -> tuple[str, int] | None:
    if not isinstance(table, dict):
        raise ConfigError("exporter: must be a table like [exporter] listen = \"127.0.0.1:9464\"")
    _check_keys(table, EXPORTER_KEYS, "exporter")
    if "listen" not in table:
        return None
    return parse_listen(table["listen"], "exporter.listen")


def parse_listen(text: Any, where: str = "--serve-metrics") -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``PORT`` (loopback) -> (host, port); port 0 picks a free one."""
    if not isinstance(text, str) or not text.strip() or len(text) > 300:
        raise ConfigError(f"{where}: must be HOST:PORT like 127.0.0.1:9464")
    text = text.strip()
    if text.isdigit():
        host, port_text = "127.0.0.1", text
    elif text.startswith("["):
        host, sep, port_text = text[1:].partition("]:")
        if not sep:
            raise ConfigError(f"{where}: {text!r}: expected [IPv6]:PORT")
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or ":" in host:
            raise ConfigError(f"{where}: {text!r}: expected HOST:PORT (write an IPv6 host as [::1]:PORT)")
    if not host or not re.fullmatch(r"[A-Za-z0-9.:_-]{1,253}", host):
        raise ConfigError(f"{where}: {text!r}: the host must be a name or an address")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"{where}: {text!r}: the port must be a number from 0 to 65535")
    return host, int(port_text)


def unreadable(exc: OSError | UnicodeDecodeError, what: str | None = None) -> str:
    """Why a user's file could not be read, in the words that follow ``PATH: `` in a one-line error
    (``is a directory, not WHAT`` when *what* is given)."""
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return f"is a directory, not {what}" if what else "is a directory"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return f"cannot read: {exc.strerror or exc}"


MAX_TEXT_BYTES = 32 << 20
"""A prompt file (``--prompt-file``) larger than this (32 MiB, some 8 M tokens) is refused."""


def read_user_text(path: Path | str, what: str, *, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """A text file the user names (``-``: stdin), read at most *max_bytes* (``/dev/zero`` or an endless pipe
    must not read forever); a one-line ConfigError ``WHAT PATH: why`` when it cannot be read, is not UTF-8 or
    is larger."""
    try:
        if str(path) == "-":
            import sys

            raw = sys.stdin.buffer.read(max_bytes + 1)
        else:
            with open(path, "rb") as fh:
                raw = fh.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise ConfigError(f"{what} {path}: larger than {max_bytes >> 20} MiB; not read")
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{what} {path}: {unreadable(exc)}") from None


def read_toml(path: Path, error: type[Exception], *, max_bytes: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """The TOML file at *path* as a dict; *error* with a one-line message when it cannot be read or parsed,
    is larger than *max_bytes*, or nests deeper than :data:`MAX_NESTING`."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: {unreadable(exc)}") from None
    if len(raw) > max_bytes:
        raise error(f"{path}: larger than {max_bytes:,} bytes; not read")
    try:
        return loads_toml(raw.decode("utf-8"), str(path))
    except UnicodeDecodeError as exc:
        raise error(f"{path}: {unreadable(exc)}") from None
    except ConfigError as exc:
        raise error(str(exc)) from None


def loads_toml(text: str, where: str) -> dict[str, Any]:
    """TOML text parsed, bounded: ConfigError (one line naming *where*) when it is invalid or nested deeper
    than :data:`MAX_NESTING` (tomllib recurses once per level and would overflow the stack on a few hundred
    levels: that is caught here, at the read)."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply (at most {MAX_NESTING} tables/arrays)") from None
    return check_nesting(data, where, depth=MAX_NESTING + 1, finite=False)


def load_config(path: Path | None = None) -> Config:
    """Read ``path`` (must exist) or the default file (may be absent)."""
    explicit = path is not None
    path = Path(path) if path is not None else default_config_path()
    if not path.exists():
        if explicit:
            raise ConfigError(f"config file {path} does not exist")
        return Config()
    return parse_config(read_toml(path, ConfigError), path)


def parse_lane_arg(text: str) -> LaneConfig:
    """``NAME=URL`` from the command line."""
    name, sep, url = text.partition("=")
    if not sep:
        raise ConfigError(f"--lane {text!r}: expected NAME=URL, e.g. A=http://127.0.0.1:8001/v1")
    return LaneConfig(validate_name(name.strip(), "--lane"), validate_url(url.strip(), f"--lane {name}"))


def merge_lanes(config: Config, lane_args: list[str]) -> Config:
    """``--lane`` arguments override (same name) or extend the file's lanes."""
    lanes = {lane.name: lane for lane in config.lanes}
    for arg in lane_args:
        lane = parse_lane_arg(arg)
        old = lanes.get(lane.name)
        if old is not None:  # keep file settings (model, key env, defaults), take the new URL
            lane = LaneConfig(lane.name, lane.url, old.model, old.api_key_env, old.headers, old.defaults, old.timeout,
                              old.deadline, old.telemetry, old.cost_per_hour)
        lanes[lane.name] = lane
    return Config(tuple(lanes.values()), config.probe, config.theme, config.record, config.path, config.slo,
                  config.alerts, config.exporter_listen)
