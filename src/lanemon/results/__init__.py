"""Typed results: one msgspec Struct per thing a workload reports (issue 37, item 2).

Each workload's pure ``results(events)`` builds these; the CLI tables, the TUI screens, ``--json``
(``msgspec.to_builtins``), the report sections, ``export``, the history rows and the exporter all read them by
attribute.  The same Structs are the published ``--json`` contract (``lanemon schema NAME``,
reports/json_schema.py), so what a surface reads and what ``--json`` promises cannot drift apart.

One module per workload (``decode``, ``prefill``, ``needles``, ``load``, ``sweep``, ``race``, ``check``,
``agree``, ...) and ``common`` for the parts they share (energy and cost, SLO/goodput, a bench run's config and
state).  Units follow the metric catalogue (measure/catalogue.py): ``_s`` seconds, ``_tok_s`` tokens per second,
``_rps`` requests per second.
"""
