"""Hostile config files and flags (issue 24 item 4): every value finite and in range, header names and values
per RFC 9110, bounded nesting; one line naming the field and exit 2, never a traceback or a later failure."""

from __future__ import annotations

import argparse
import math

import pytest

from lanemon.cli.common import EXIT_USAGE, UsageError, int_list, number_arg, parse_number, positive_float, \
    positive_int, seconds_arg
from lanemon.cli.main import main
from lanemon.config import (MAX_CONFIG_BYTES, ConfigError, check_headers, check_nesting, check_number, load_config,
                            loads_toml, parse_lane_arg, seconds_field)

LANE = '[lanes.A]\nurl = "http://127.0.0.1:9/v1"\n'


def write(tmp_path, text: str):
    path = tmp_path / "lanes.toml"
    path.write_text(text, encoding="utf-8")
    return path


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


# ---------------------------------------------------------------- numbers
@pytest.mark.parametrize("line, field", [
    ("timeout = nan", "lanes.A.timeout"),
    ("timeout = -nan", "lanes.A.timeout"),
    ("deadline = nan", "lanes.A.deadline"),
    ("deadline = inf", "lanes.A.deadline"),
    ("deadline = -inf", "lanes.A.deadline"),
    ("timeout = 0", "lanes.A.timeout"),
    ("timeout = 1e300", "lanes.A.timeout"),
    ("timeout = true", "lanes.A.timeout"),
    ('timeout = "600"', "lanes.A.timeout"),
])
def test_lane_numbers_finite_and_in_range(tmp_path, line, field):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, LANE + line + "\n"))
    msg = str(info.value)
    assert msg.startswith(f"{field}: must be a number of seconds in (0, ") and "\n" not in msg


@pytest.mark.parametrize("text, field", [
    ("[probe]\ninterval = nan\n", "probe.interval"),
    ("[probe]\ninterval = inf\n", "probe.interval"),
    ("[probe]\nmax_tokens = 3.5\n", "probe.max_tokens"),
    ("[probe]\nmax_tokens = 1e30\n", "probe.max_tokens"),
    ("[probe]\nmax_tokens = 0\n", "probe.max_tokens"),
])
def test_probe_numbers(tmp_path, text, field):
    with pytest.raises(ConfigError, match=rf"^{field}: must be a "):
        load_config(write(tmp_path, text))


def test_good_numbers_kept(tmp_path):
    cfg = load_config(write(tmp_path, LANE + "timeout = 30\ndeadline = 90.5\n[probe]\nmax_tokens = 8.0\n"))
    assert (cfg.lanes[0].timeout, cfg.lanes[0].deadline, cfg.probe.max_tokens) == (30.0, 90.5, 8)
    assert isinstance(cfg.probe.max_tokens, int)


def test_nan_timeout_is_exit_2_naming_the_field(tmp_path, capsys):
    """The audit's case: `timeout = nan` was accepted and every request then failed, the field unnamed, exit 0."""
    code, err = run(capsys, "race", "--config", str(write(tmp_path, LANE + "timeout = nan\n")), "--headless",
                    "--prompt", "hi", "--no-record")
    assert code == EXIT_USAGE
    assert err.strip().count("\n") == 0 and "lanes.A.timeout" in err and "nan" in err
    assert "Traceback" not in err


def test_helpers_for_new_fields():
    """The helpers other config sections reuse: a field named in the message, a default when absent."""
    assert seconds_field({}, "poll", "exporter", 5.0) == 5.0
    assert seconds_field({"poll": 2}, "poll", "exporter", 5.0) == 2.0
    with pytest.raises(ConfigError, match=r"^exporter\.poll: must be a number of seconds in \(0, 60\], not nan$"):
        seconds_field({"poll": math.nan}, "poll", "exporter", 5.0, hi=60)
    assert check_number(3, "x", lo=0, hi=10, integer=True) == 3
    with pytest.raises(ConfigError, match=r"^cost_per_hour: must be a number in \[0, 1000\], not -1$"):
        check_number(-1, "cost_per_hour", lo=0, hi=1000)


# ---------------------------------------------------------------- headers
@pytest.mark.parametrize("headers, fragment", [
    ({"X-A": "vé☃"}, "headers['X-A']: contains 'é' (U+00E9)"),
    ({"X-A": "a\r\nX-Evil: 1"}, "headers['X-A']: contains '\\r'"),
    ({"X-A": "a\x00b"}, "headers['X-A']: contains '\\x00'"),
    ({"X-A": " padded"}, "leading or trailing whitespace"),
    ({"X A": "v"}, "header name 'X A' is not an HTTP token"),
    ({"X:A": "v"}, "is not an HTTP token"),
    ({"": "v"}, "is not an HTTP token"),
    ({"Ünï": "v"}, "is not an HTTP token"),
    ({"Content-Length": "1"}, "'Content-Length' is set by lanemon itself"),
    ({"transfer-encoding": "chunked"}, "is set by lanemon itself"),
    ({"X-A": "v" * 9000}, "at most 8,192"),
    ({f"X-{i}": "v" for i in range(65)}, "65 headers, at most 64"),
    ({"X-A": 5}, "headers['X-A']: must be a string"),
])
def test_headers_refused_with_the_field_named(headers, fragment):
    with pytest.raises(ConfigError) as info:
        check_headers(headers, "lanes.A.headers")
    msg = str(info.value)
    assert msg.startswith("lanes.A.headers") and fragment in msg and "\n" not in msg and "\r" not in msg


def test_good_headers_kept():
    ok = {"X-Team": "serving", "Authorization": "Bearer abc.def", "X-Tab": "a\tb", "X-Empty": ""}
    assert check_headers(ok, "h") == ok


def test_non_ascii_header_value_is_exit_2_not_a_traceback(tmp_path, capsys):
    path = write(tmp_path, LANE + 'headers = { "X-Team" = "vé☃" }\n')
    code, err = run(capsys, "race", "--config", str(path), "--headless", "--prompt", "hi", "--no-record")
    assert code == EXIT_USAGE and "lanes.A.headers['X-Team']" in err and "UnicodeEncodeError" not in err


# ---------------------------------------------------------------- nesting and size
def test_deep_array_is_exit_2_not_recursion_error(tmp_path, capsys):
    path = write(tmp_path, LANE + "[lanes.A.defaults]\nx = " + "[" * 3000 + "]" * 3000 + "\n")
    code, err = run(capsys, "race", "--config", str(path), "--headless", "--prompt", "hi", "--no-record")
    assert code == EXIT_USAGE and "nested too deeply" in err and "RecursionError" not in err
    assert str(path) in err


def test_moderate_nesting_bounded_after_parse():
    """A depth tomllib parses (40) is still refused: `defaults` is sent in every request body."""
    deep = "x = " + "[" * 40 + "]" * 40 + "\n"
    with pytest.raises(ConfigError, match="nested more than"):
        loads_toml(deep, "f.toml")
    with pytest.raises(ConfigError, match=r"^lanes\.A\.defaults\.a\.b: nested more than 2"):
        check_nesting({"a": {"b": {"c": 1}}}, "lanes.A.defaults", depth=2)
    assert check_nesting({"a": [1, {"b": 2.5}]}, "d") == {"a": [1, {"b": 2.5}]}


def test_deep_inline_tables_bounded():
    with pytest.raises(ConfigError, match="nested"):
        loads_toml("x = " + "{a=" * 3000 + "1" + "}" * 3000, "f.toml")


def test_huge_config_refused_unread(tmp_path):
    path = write(tmp_path, LANE + "# " + "x" * MAX_CONFIG_BYTES + "\n")
    with pytest.raises(ConfigError, match="larger than"):
        load_config(path)


def test_theme_file_bounded(tmp_path):
    from lanemon.ui.themes import ThemeError, load_theme_file

    path = tmp_path / "evil.toml"
    path.write_text("x = " + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(ThemeError, match="nested too deeply"):
        load_theme_file(path)


# ---------------------------------------------------------------- flags
@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "1e999", "0", "-1", "abc", "", "3000000"])
def test_seconds_flag_refuses(text):
    with pytest.raises(argparse.ArgumentTypeError):
        seconds_arg(text)


@pytest.mark.parametrize("parse, text", [(positive_int, "1e30"), (positive_int, "2.5"), (positive_int, "nan"),
                                         (positive_int, "0"), (positive_float, "nan"), (positive_float, "inf")])
def test_number_flags_refuse(parse, text):
    with pytest.raises(argparse.ArgumentTypeError, match=repr(text)):
        parse(text)


def test_number_flags_accept():
    assert positive_int("12") == 12 and positive_int("1_000") == 1000 and positive_int("2e3") == 2000
    assert seconds_arg("0.5") == 0.5 and number_arg(lo=0, hi=1)("0") == 0.0
    assert parse_number(None, "--x") is None and parse_number("4", "--reps", lo=1, integer=True) == 4
    with pytest.raises(UsageError, match=r"^--reps: must be a whole number in \[1, 10\], not 'nan'$"):
        parse_number("nan", "--reps", lo=1, hi=10, integer=True)
    assert int_list("1,2,8k") == [1, 2, 8000]
    for bad in ("nan", "inf", "1e999", "2.5", "1e30"):
        with pytest.raises(argparse.ArgumentTypeError):
            int_list(bad)


@pytest.mark.parametrize("argv, flag", [
    (["race", "--demo", "--headless", "--deadline", "nan"], "--deadline"),
    (["race", "--demo", "--headless", "--stall-timeout", "inf"], "--stall-timeout"),
    (["race", "--demo", "--headless", "--time-scale", "nan"], "--time-scale"),
    (["race", "--demo", "--headless", "--slo", "ttft=inf"], "--slo"),
    (["race", "--demo", "--headless", "--slo", "e2e=nan"], "--slo"),
    (["bench", "load", "--demo", "--headless", "--rate", "nan"], "--rate"),
    (["bench", "load", "--demo", "--headless", "--rate", "inf"], "--rate"),
    (["bench", "load", "--demo", "--headless", "--rate", "5", "--duration", "nan"], "--duration"),
    (["bench", "load", "--demo", "--headless", "--rate", "5", "--warmup", "-1"], "--warmup"),
    (["bench", "load", "--demo", "--headless", "--rate", "5", "--requests", "1e30"], "--requests"),
    (["bench", "load", "--demo", "--headless", "--rate", "5", "--requests", "3", "--temperature", "nan"], "--temperature"),
    (["bench", "decode", "--demo", "--headless", "--temperature", "inf"], "--temperature"),
    (["bench", "decode", "--demo", "--headless", "--reps", "nan"], "--reps"),
    (["bench", "decode", "--demo", "--headless", "--levels", "nan"], "--levels"),
    (["bench", "sweep", "--demo", "--headless", "--knee-gain", "nan"], "--knee-gain"),
    (["bench", "sweep", "--demo", "--headless", "--max-level", "1e9"], "--max-level"),
    (["replay", "x.jsonl", "--speed", "nan"], "--speed"),
    (["race", "--lane", "A=http://127.0.0.1:9/v1\r\nX: y", "--headless"], "--lane"),
])
def test_cli_numbers_exit_2_naming_the_flag(capsys, argv, flag):
    """Flags checked by their argparse type exit through argparse (SystemExit 2); the others by UsageError."""
    try:
        code = main(argv + (["--no-record"] if argv[0] != "replay" else []))
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert flag in err and "Traceback" not in err


def test_lane_arg_refuses_control_characters():
    with pytest.raises(ConfigError, match="control characters"):
        parse_lane_arg("A=http://127.0.0.1:9/v1\nHost: evil")


# ---------------------------------------------------------------- the other files a user hands lanemon
def test_prompt_set_nesting_and_size(tmp_path, monkeypatch):
    from lanemon.workloads import prompts
    from lanemon.workloads.prompts import PromptSetError, load_prompt_set, parse_prompt_set

    with pytest.raises(PromptSetError, match="nested too deeply"):
        parse_prompt_set("x = " + "[" * 3000 + "]" * 3000, "evil.toml")
    monkeypatch.setattr(prompts, "MAX_PROMPT_SET_BYTES", 100)
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * 200)
    with pytest.raises(PromptSetError, match="larger than"):
        load_prompt_set(big)


@pytest.mark.parametrize("text", ["uniform:1,inf", "uniform:1,nan", "normal:nan,1", "normal:5,inf",
                                  "fixed:100000000000", "uniform:1,1e30"])
def test_length_distributions_finite_and_bounded(text):
    from lanemon.workloads.bench.load import LengthDist, LoadSpecError

    with pytest.raises(LoadSpecError, match="--input-len must be"):
        LengthDist.parse(text, "--input-len")


def test_length_file_bounded(tmp_path, monkeypatch):
    from lanemon.workloads.bench import load
    from lanemon.workloads.bench.load import LengthDist, LoadSpecError

    monkeypatch.setattr(load, "MAX_TRACE_BYTES", 64)
    with pytest.raises(LoadSpecError, match="larger than"):
        LengthDist.parse("file:/dev/zero", "--input-len")  # used to read forever
    f = tmp_path / "lens.txt"
    f.write_text("5\n99999999999\n")
    with pytest.raises(LoadSpecError, match="--input-len must be"):
        LengthDist.parse(f"file:{f}", "--input-len")


@pytest.mark.parametrize("lines, fragment", [
    (['{"t": 0}', '{"t": 1e300}'], "line 2"),
    (['{"t": 0}', '{"t": 1e11}'], "spans"),
    (['{"t": 0, "input_tokens": 99999999999}'], "line 1"),
    (['[' * 5000 + ']' * 5000], "line 1"),
    (['"t"'], "line 1"),
])
def test_trace_values_bounded(tmp_path, lines, fragment):
    from lanemon.workloads.bench.load import LoadSpecError, read_trace

    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LoadSpecError, match=fragment):
        read_trace(path)


# ---------------------------------------------------------------- the monitor's sections (docs/MONITOR.md)
@pytest.mark.parametrize("toml, words", [
    ('[slo]\nttft = nan', "slo.ttft: must be a number of seconds"),
    ('[slo]\nttft = -1', "slo.ttft: must be a number of seconds"),
    ('[slo]\nlatency = 1', "slo: unknown key 'latency'"),
    ('[[alerts]]\nwhen = "up < 1"\nfor = "1y"', "alerts[0].for: '1y' is not a duration"),
    ('[[alerts]]\nwhen = "up < 1"\nfor = inf', "alerts[0].for: must be a number of seconds"),
    ('[[alerts]]\nwhen = "up < 1"\nseverity = "loud"', "alerts[0].severity: must be one of"),
    ('[[alerts]]\nwhen = "up < 1"\ncommand = "rm -rf /"', "alerts[0].command: must be a non-empty argv list"),
    ('[[alerts]]\nwhen = 3', "alerts[0].when: must be a rule"),
    ('[[alerts]]\nwhen = "up < 1"\nlanes = ["bad name!"]', "alerts[0].lanes"),
    ('[[alerts]]\nwhen = "up < 1"\nshell = true', "alerts[0]: unknown key 'shell'"),
    ('[exporter]\nlisten = "0.0.0.0"', "exporter.listen: '0.0.0.0': expected HOST:PORT"),
    ('[exporter]\nlisten = "127.0.0.1:70000"', "the port must be a number from 0 to 65535"),
    ('[exporter]\nport = 1', "exporter: unknown key 'port'"),
])
def test_monitor_sections_are_validated_with_the_field_named(toml, words):
    from lanemon.config import ConfigError, loads_toml, parse_config

    with pytest.raises(ConfigError) as exc:
        parse_config(loads_toml(toml, "lanes.toml"))
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_a_bad_alert_rule_in_lanes_toml_is_exit_2_naming_the_field(tmp_path, capsys):
    from lanemon.cli.main import main

    cfg = tmp_path / "lanes.toml"
    cfg.write_text('[lanes.A]\nurl = "http://127.0.0.1:9/v1"\n[[alerts]]\nwhen = "ttft_p50 >> 1"\n')
    assert main(["live", "--headless", "--config", str(cfg), "--no-record"]) == 2
    err = capsys.readouterr().err
    assert "alerts[0].when:" in err and err.count("\n") == 1
    assert main(["live", "--headless", "--config", str(cfg), "--no-record", "--alert", "up < 1",
                 "--serve-metrics", "nowhere"]) == 2


THEME = 'name = "evil"\nprimary = "#112233"\n'


@pytest.mark.parametrize("extra, fragment", [
    ("text_alpha = nan\n", "'text_alpha': must be a number in [0, 1], not nan"),
    ("luminosity_spread = inf\n", "'luminosity_spread': must be a number in [0, 1], not inf"),
    ("text_alpha = 7\n", "must be a number in [0, 1]"),
    ('[variables]\n"border" = "red; } Screen { display: none"\n', "[variables]"),
    ('[variables]\n"a b" = "red"\n', "[variables]"),
])
def test_theme_values_bounded(tmp_path, extra, fragment):
    from lanemon.ui.themes import ThemeError, load_theme_file

    path = tmp_path / "evil.toml"
    path.write_text(THEME + extra)
    with pytest.raises(ThemeError) as info:
        load_theme_file(path)
    assert fragment in str(info.value) and str(path) in str(info.value)


def test_theme_name_is_printable(tmp_path):
    from lanemon.ui.themes import ThemeError, load_theme_file

    path = tmp_path / "evil.toml"
    path.write_text('name = "ev\\u001b[2Jil"\nprimary = "#112233"\n')
    with pytest.raises(ThemeError, match="printable"):
        load_theme_file(path)


@pytest.mark.parametrize("content, fragment", [(b"\xff\xfe\x00bin", "not UTF-8 text"), (None, "larger than")])
def test_prompt_files_bounded_and_decoded(tmp_path, capsys, content, fragment):
    """`--prompt-file` of race and agree: a binary file was a UnicodeDecodeError traceback (agree), /dev/zero
    read until memory ran out (both)."""
    if content is None:
        path = "/dev/zero"
    else:
        path = tmp_path / "p.txt"
        path.write_bytes(content)
    for argv in (["race", "--demo", "--headless", "--no-record", "--prompt-file", str(path)],
                 ["agree", "--demo", "--headless", "--no-record", "--prompt-file", str(path)]):
        code, err = run(capsys, *argv)
        assert code == EXIT_USAGE and fragment in err and "Traceback" not in err, (argv, err)
