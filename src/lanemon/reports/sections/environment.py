"""The report's title and its environment table (lanes, lanemon version, recording, host)."""

from __future__ import annotations

from lanemon.reports.data import lane_names
from lanemon.results.analysis import Analysis, Environment
from lanemon.results.counters import EngineCounters


def session_text(c: EngineCounters) -> str:
    """What an engine did over the session, from its /metrics counters (measure/counters.counters_text)."""
    from lanemon.measure.counters import counters_text

    return counters_text(c)


def environment_rows(env: Environment) -> list[list[str]]:
    rows = []
    for lane in env.lanes:
        rows.append([f"lane {lane.name}", f"{lane.url or '—'} · model {lane.model or '—'}"])
        c = lane.session_counters
        if isinstance(c, EngineCounters):
            rows.append([f"lane {lane.name} engine", session_text(c)])
    rows.append(["lanemon", f"{env.lanemon or '?'} (recording schema {env.schema or '?'}); "
                            f"report by {env.reported_by}"])
    rows.append(["recorded", str(env.created or "—")])
    recordings = env.recordings or []
    many = len(recordings) > 1
    if env.duration_s is not None:
        rows.append(["duration", f"{env.duration_s:.1f} s, {env.events:,} events"
                     + (f" in {len(recordings)} recordings" if many else "")])
    rows.append(["command", str(env.command or "—")])
    host = env.host  # the header's, untrusted: shown as it is
    if host:
        mem = host.get("memory_bytes")
        bits = [str(host.get("platform", "?")), f"Python {host.get('python', '?')}", f"{host.get('cpus', '?')} CPUs"]
        if mem:
            bits.append(f"{mem / 2**30:.0f} GiB")
        rows.append(["host", ", ".join(bits)])
    if many:
        rows.append(["recordings", ", ".join(str(r) for r in recordings)])
    elif env.recording:
        rows.append(["recording", str(env.recording)])
    return rows


def title(analysis: Analysis) -> str:
    named = [(lane.name, lane.model) for lane in analysis.environment.lanes] or \
        [(n, None) for n in lane_names(analysis)]
    names = [f"{name} ({model})" if model else str(name) for name, model in named]
    benches = [b for b in ("decode", "prefill", "needles", "race", "qeval", "agree", "kl", "gauntlet")
               if analysis.bench(b)]
    head = " vs ".join(names) if names else "lanemon session"
    return f"{head}: {', '.join(benches)}" if benches else head
