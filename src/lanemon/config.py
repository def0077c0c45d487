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

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import platformdirs

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
TOP_KEYS = {"lanes", "probe", "theme", "record"}


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
class Config:
    lanes: tuple[LaneConfig, ...] = ()
    probe: ProbeConfig = ProbeConfig()
    theme: str | None = None
    record: bool = True
    path: Path | None = None


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


def default_config_path() -> Path:
    return config_dir() / "lanes.toml"


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
    headers = table.get("headers", {})
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ConfigError(f"{where}.headers: must be a table of strings")
    defaults = table.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ConfigError(f"{where}.defaults: must be a table")
    timeout = table.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"{where}.timeout: must be a positive number of seconds")
    deadline = table.get("deadline", DEFAULT_DEADLINE)
    if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or deadline <= 0:
        raise ConfigError(f"{where}.deadline: must be a positive number of seconds")
    telemetry = validate_telemetry(table["telemetry"], f"{where}.telemetry") if "telemetry" in table else None
    cost = validate_cost(table["cost_per_hour"], f"{where}.cost_per_hour") if "cost_per_hour" in table else None
    return LaneConfig(name, url, model, key_env, dict(headers), dict(defaults), float(timeout), float(deadline),
                      telemetry, cost)


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
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_COST_PER_HOUR:
        raise ConfigError(f"{where}: must be a number of USD per hour in [0, {MAX_COST_PER_HOUR:g}], "
                          f"not {_shown(repr(value))}")
    return float(value)


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
    interval = table.get("interval", base.interval)
    if not isinstance(interval, (int, float)) or interval <= 0:
        raise ConfigError("probe.interval: must be a positive number of seconds")
    max_tokens = table.get("max_tokens", base.max_tokens)
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ConfigError("probe.max_tokens: must be a positive integer")
    prompt = table.get("prompt", base.prompt)
    if not isinstance(prompt, str) or not prompt:
        raise ConfigError("probe.prompt: must be a non-empty string")
    endpoint = table.get("endpoint", base.endpoint)
    if endpoint not in ("chat", "completions"):
        raise ConfigError("probe.endpoint: must be 'chat' or 'completions'")
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError("probe.enabled: must be true or false")
    return ProbeConfig(float(interval), max_tokens, prompt, endpoint, enabled)


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
    return Config(lanes=lanes, probe=probe, theme=theme, record=record, path=path)


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


def read_toml(path: Path, error: type[Exception]) -> dict[str, Any]:
    """The TOML file at *path* as a dict; *error* with a one-line message when it cannot be read or parsed."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise error(f"{path}: {unreadable(exc)}") from None


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
    return Config(tuple(lanes.values()), config.probe, config.theme, config.record, config.path)
