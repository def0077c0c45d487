"""The one-line status bar: mode, event count, session time, pause/speed, recording."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label

from lanemon.measure.load import Starvation, starvation_cause
from lanemon.reports.simulated import chip_note
from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.widgets.repaint import hold_width, set_text

def short_path(path: Path | str | None) -> str:
    """The recording path with the home directory shown as ``~``."""
    if path is None:
        return ""
    text = str(path)
    home = str(Path.home())
    if home and home != "/" and text.startswith(home + "/"):
        text = "~" + text[len(home) :]
    return text


TICK_NS = 1_000_000_000
"""A live session's event count and clock move at most once per this much session time (a redraw at every
token event would repaint the bar ten times a second for a count nobody reads that fast)."""
STARVED_RECENT_NS = 30_000_000_000
"""A starved window this recent (session time) is named in the status bar."""


def recent_starvation(state) -> Starvation | None:
    """Why lanemon was starved, when its latest starved window is recent (None otherwise)."""
    load = getattr(state, "load", None)
    t = getattr(load, "last_bound_t", None)
    if t is None or getattr(state, "last_t", 0) - t > STARVED_RECENT_NS:
        return None
    return starvation_cause(load.last_bound)


def _shared(app) -> int | None:
    """Viewers watching when the app's session is shared (``app.share``, a share Publisher), else None."""
    pub = getattr(app, "share", None)
    if pub is None:
        return None
    n = getattr(pub, "viewers", 0)
    return n if isinstance(n, int) else 0


SEP = "  │  "
SHED = (("cpu", 1), ("starved", 1), ("events", 1))
"""What a narrow status bar gives up first, one step at a time: (item, its next shorter form).  lanemon's own
CPU goes, then the starvation note keeps `◌ starved` without its cause (the toast and the lane cards say it),
then the event count; the session time, a replay's speed, PAUSED and finished always stay."""


def markup_cells(markup: str) -> int:
    """Terminal cells of a chip's text (markup tags left out)."""
    from textual.content import Content

    try:
        return Content.from_markup(markup).cell_length
    except Exception:  # not markup after all: its characters
        return len(markup)


def fit_items(items: dict[str, list[tuple[str, str]]], room: int | None,
              shed: tuple[tuple[str, int], ...] = SHED) -> str:
    """The items' markup joined by :data:`SEP`, each in its fullest form whose line fits ``room`` cells (None:
    every item whole), shortened or left out whole in :data:`SHED`'s order: a word is never cut."""
    level = {k: 0 for k in items}

    def line(plain: bool) -> str:
        return SEP.join(items[k][level[k]][plain] for k in items if items[k][level[k]][plain])

    for key, step in shed:
        if room is None or len(line(True)) <= room:
            break
        if key in items:
            level[key] = min(step, len(items[key]) - 1)
    return line(False)


class PathLabel(Label):
    """A label that holds its text's forms, fullest first, and shows the first that fits its width whole --
    again at every resize (its width is what the facts beside it leave: known only after a layout)."""

    forms: list[str] = []
    picked = ""
    dim = False

    def show_forms(self, forms: list[str], *, dim: bool = False) -> str:
        """Keep ``forms`` (plain text; ``dim``: drawn dimmed) and return the one that fits now."""
        self.forms, self.dim = list(forms), dim
        return self._pick()

    def markup_of(self, text: str) -> str:
        return f"[dim]{escape(text)}[/]" if text else ""

    def _pick(self) -> str:
        room = self.size.width - 2  # its padding
        # width 0: not laid out yet (the fullest form); 1 or 2 cells: no room, nothing (the demo replay at 80x24
        # showed `…` there, a 1-cell label holding the whole path)
        fits = [f for f in self.forms if self.size.width == 0 or len(f) <= room]
        self.picked = fits[0] if fits else ""
        return self.picked

    def on_resize(self) -> None:
        if self.forms:
            before = self.picked
            if self._pick() != before:
                set_text(self, self.markup_of(self.picked) if self.dim else escape(self.picked))


class InfoBar(Horizontal):
    """A one-line bar docked at the top: a chip at the left (``CHIP`` is its id), the facts (``#info``)
    after it, a path at the right end (``#path``).  The status bar and the bench screen's header are two."""

    CHIP = "chip"
    CHIP_STATE = ""
    """The chip's colour class before the first update."""
    DEFAULT_CSS = """
    InfoBar {
        dock: top;
        height: 1;
        background: $panel;
        color: $text;
    }
    InfoBar Label { text-wrap: nowrap; text-overflow: ellipsis; }
    InfoBar .chip { padding: 0 1; text-style: bold; color: $background; background: $primary; }
    /* the chip's colour says the mode (status bar) or the bench's state (bench header) */
    InfoBar .chip.-live, InfoBar .chip.-finished { background: $success; }
    InfoBar .chip.-demo, InfoBar .chip.-bench { background: $secondary; }
    InfoBar .chip.-replay { background: $accent; }
    InfoBar .chip.-stopped { background: $warning; }
    InfoBar #info { width: auto; padding: 0 1; }
    InfoBar #path { width: 1fr; color: $text-muted; padding: 0 1; text-align: right; }
    """

    def compose(self) -> ComposeResult:
        yield Label("", id=self.CHIP, classes=f"chip {self.CHIP_STATE}".strip())
        yield Label("", id="info")
        yield PathLabel("", id="path")

    path_cut = False
    """True when ``#path`` could not hold even the file's name whole (the screen then shows it elsewhere)."""

    def fit_path(self, verb: str, path: str, *, alone: bool = False, short: str = "") -> str:
        """``verb path`` for the ``#path`` label; where it does not fit, ``verb name`` (the file's name whole
        rather than a path cut in it), or with ``alone`` (the chip says it already) the name by itself; where
        not even the name fits, ``short`` (``● rec``: recording, the name not shown) or nothing, and
        ``path_cut`` is set: never a name cut in the middle.  The label keeps these forms and takes the one
        that fits again whenever its width changes (a replay's header, drawn before the layout settled, read
        `fro…` and `f…` at 80 columns: nothing redrew it after the last event)."""
        name = Path(path).name
        forms = [f"{verb} {path}", f"{verb} {name}", name if alone else "", short]
        label = self.query_one("#path", Label)
        picked = label.show_forms([f for f in forms if f]) if isinstance(label, PathLabel) else forms[0]
        self.path_cut = picked not in forms[:3] or not picked
        return picked

    def fit_words(self, *forms: str) -> str:
        """The first of ``forms`` (fullest first) that fits ``#path`` whole, dimmed; nothing when none does
        (chosen again on a resize, as :meth:`fit_path`)."""
        label = self.query_one("#path", Label)
        if isinstance(label, PathLabel):
            label.show_forms(list(forms), dim=True)
            return label.markup_of(label.picked)
        return f"[dim]{forms[0]}[/]" if forms else ""

    def show_chip(self, text: str, state: str, states: tuple[str, ...]) -> None:
        """The chip says ``text`` in the colour of ``state`` (one of ``states``, as ``-live``)."""
        chip = self.query_one(f"#{self.CHIP}", Label)
        set_text(chip, text)
        for cls in states:
            chip.set_class(cls == state, cls)


def path_verb(mode: str) -> str:
    """What a header says before the recording's path: ``from`` in a replay (it reads the file), ``rec →``
    otherwise (it writes it)."""
    return "from" if mode == "replay" else "rec →"


def sim_note(app) -> str:
    """``" · SIM"`` (or ``" · SIM B"``) when the app's lanes are lanemon's simulator
    (reports/simulated.py): every header chip says it, in replay as live ("" in a demo: its chip says so)."""
    watch = getattr(app, "simulated", None)
    if watch is None or getattr(getattr(app, "source", None), "mode", None) == "demo":
        return ""
    state = getattr(app, "state", None)
    # lane names come from the lanes' config or a recording (untrusted): escaped for the chips' markup
    return escape(chip_note(watch.lanes(), getattr(state, "lanes", None) or watch.names))


class StatusBar(InfoBar):
    """Session-wide facts; every value comes from the source or from event time."""

    CHIP = "mode"
    _ticked: tuple[int, int] | None = None
    """(events, session time) as last shown while a live session runs."""

    def show(self, source, state) -> None:
        """The bar for a source (its mode, pause, speed, recording) and the dashboard fold (events, time,
        lanemon's own CPU, why it was starved lately)."""
        host = getattr(state, "host", None)
        # lanemon's own CPU over the last 10 s (folds/dashboard.HostState.own_cpu_pct), not one 0.5 s window's
        own = host.own_cpu_pct() if callable(getattr(host, "own_cpu_pct", None)) else None
        self.update_from(
            own_cpu_pct=own if isinstance(own, (int, float)) and not isinstance(own, bool) else None,
            starved=recent_starvation(state),
            mode=getattr(source, "mode", "live"),
            events=state.events,
            last_t=state.last_t,
            paused=bool(getattr(source, "paused", False)),
            speed=getattr(source, "speed", None),
            finished=bool(getattr(source, "finished", False)),
            recording_path=getattr(source, "recording_path", None),
            shared=_shared(self.app),
            tick=bool(getattr(source, "real_time", False)),
            simulated=sim_note(self.app),
        )

    def update_from(
        self,
        *,
        mode: str,
        events: int,
        last_t: int,
        paused: bool,
        speed: float | None,
        finished: bool,
        recording_path: Path | str | None,
        own_cpu_pct: float | None = None,
        starved: Starvation | None = None,
        shared: int | None = None,
        tick: bool = False,
        simulated: str = "",
    ) -> None:
        """``tick``: the source runs in real time (live, demo, attached), so the event count and the clock
        move at most once a second while it runs; ``simulated``: what the chip adds for simulated lanes
        (:func:`sim_note`)."""
        chip = mode.upper() + simulated
        if shared is not None:  # served to viewers (lanemon share): said all along, with how many; `s` tells how
            chip += f" · SHARED {shared} viewer{'s' * (shared != 1)}"
        self.show_chip(chip, f"-{mode}", ("-live", "-demo", "-replay"))
        if tick and not paused and not finished:  # live: the count and clock tick once a second
            held = self._ticked
            if held is not None and held[1] <= last_t < held[1] + TICK_NS:
                events, last_t = held
            else:
                self._ticked = (events, last_t)
        else:
            self._ticked = None

        # each item: its forms, fullest first ("" = left out); what does not fit goes whole, in SHED's order
        items: dict[str, list[tuple[str, str]]] = {
            "events": [(f"[b]{events:,}[/] events", f"{events:,} events"), ("", "")],
            "t": [(f"[dim]t[/] {fmt.event_time(last_t)}", f"t {fmt.event_time(last_t)}")]}
        if mode == "replay" and speed is not None:
            items["speed"] = [(f"[dim]speed[/] [b]{fmt.speed(speed)}[/]", f"speed {fmt.speed(speed)}")]
        # lanemon's own share of one core, its latest load-watch window: this process's, so not in a replay
        # (there it would be the recorded process's figure read as this one's, and it cut the file's name at
        # 100 columns); a replay still says when the recorded samples were starved, just below
        if own_cpu_pct is not None and mode not in ("replay", "attach"):
            # a fixed width: a share that moves between 8 and 12 % must not reflow the screen each time
            items["cpu"] = [(f"[dim]lanemon[/] {own_cpu_pct:3.0f} % CPU", f"lanemon {own_cpu_pct:3.0f} % CPU"),
                            ("", "")]
        if starved is not None:  # samples are being flagged client-bound: say why (the toast says what to do)
            cause = starved.short or starved.why
            items["starved"] = [(f"[$warning b]◌ starved:[/] [$warning]{escape(cause)}[/]", f"◌ starved: {cause}"),
                                ("[$warning b]◌ starved[/]", "◌ starved")]
        if paused:
            items["paused"] = [("[$warning b]❚❚ PAUSED[/]", "❚❚ PAUSED")]
        if finished:
            items["finished"] = [("[$accent b]■ replay finished[/]", "■ replay finished") if mode != "attach" else
                                 ("[$accent b]■ share ended[/]", "■ share ended")]
        room = self.size.width - (markup_cells(chip) + 2) - 2  # the chip and the facts' padding
        text = fit_items(items, room if self.size.width else None)
        info = self.query_one("#info", Label)
        set_text(info, text)
        held = getattr(info.styles.min_width, "cells", None)
        if self.size.width and held and held > room + 2:  # a narrower terminal: the width held for the note
            info.styles.min_width = room + 2  # must not push the facts past the edge
        if tick and not finished:  # live: the starvation note comes, goes and changes its words (under load,
            hold_width(info, last_t)  # twice a second): the bar keeps its widest width until the note has been
            # gone for 10 s, so the screen is not laid out again at each change

        path = short_path(recording_path)
        if path:
            verb = path_verb(mode)
            set_text(self.query_one("#path", Label), escape(self.fit_path(verb, path, alone=mode == "replay",
                                                                   short="" if mode == "replay" else "● rec")))
        else:  # `not recording`, a shorter whole form or nothing: never `not reco…`
            set_text(self.query_one("#path", Label), self.fit_words() if mode == "replay" else
                     self.fit_words("not recording", "no rec"))
