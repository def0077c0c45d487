"""The report's title and its environment table (lanes, lanemon version, recording, host)."""

from __future__ import annotations

from typing import Any

from lanemon.reports.data import lane_names


def session_text(c: dict[str, Any]) -> str:
    """What an engine did over the session, from its /metrics counters (measure/counters.counters_text)."""
    from lanemon.measure.counters import counters_text

    return counters_text(c)


def environment_rows(env: dict[str, Any]) -> list[list[str]]:
    rows = []
    for lane in env.get("lanes") or []:
        rows.append([f"lane {lane.get('name')}", f"{lane.get('url') or '—'} · model {lane.get('model') or '—'}"])
        c = lane.get("session_counters")
        if isinstance(c, dict):
            rows.append([f"lane {lane.get('name')} engine", session_text(c)])
    rows.append(["lanemon", f"{env.get('lanemon') or '?'} (recording schema {env.get('schema') or '?'}); "
                            f"report by {env.get('reported_by')}"])
    rows.append(["recorded", str(env.get("created") or "—")])
    many = len(env.get("recordings") or []) > 1
    if env.get("duration_s") is not None:
        rows.append(["duration", f"{env['duration_s']:.1f} s, {env.get('events', 0):,} events"
                     + (f" in {len(env['recordings'])} recordings" if many else "")])
    rows.append(["command", str(env.get("command") or "—")])
    host = env.get("host") or {}
    if host:
        mem = host.get("memory_bytes")
        bits = [str(host.get("platform", "?")), f"Python {host.get('python', '?')}", f"{host.get('cpus', '?')} CPUs"]
        if mem:
            bits.append(f"{mem / 2**30:.0f} GiB")
        rows.append(["host", ", ".join(bits)])
    if many:
        rows.append(["recordings", ", ".join(str(r) for r in env["recordings"])])
    elif env.get("recording"):
        rows.append(["recording", str(env["recording"])])
    return rows


def title(analysis: dict[str, Any]) -> str:
    lanes = analysis.get("environment", {}).get("lanes") or [{"name": n} for n in lane_names(analysis)]
    names = [f"{lane['name']} ({lane['model']})" if lane.get("model") else str(lane["name"]) for lane in lanes]
    benches = [b for b in ("decode", "prefill", "needles", "race", "qeval", "agree", "kl", "gauntlet")
               if analysis.get(b)]
    head = " vs ".join(names) if names else "lanemon session"
    return f"{head}: {', '.join(benches)}" if benches else head
