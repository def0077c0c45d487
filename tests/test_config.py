"""Lane configuration: file + --lane overrides, and one-line errors naming the field."""

import pytest

from lanemon.config import ConfigError, load_config, merge_lanes, parse_lane_arg

GOOD = """
theme = "lanemon-light"
[probe]
interval = 2.5
[lanes.A]
url = "http://127.0.0.1:8001/v1/"
model = "deepseek-v4.1-flash"
api_key_env = "LANE_A_KEY"
headers = { "X-Team" = "serving" }
[lanes.A.defaults]
temperature = 0
[lanes.B]
url = "http://127.0.0.1:8888/v1"
"""


def write(tmp_path, text):
    p = tmp_path / "lanes.toml"
    p.write_text(text)
    return p


def test_good_file_parses(tmp_path, monkeypatch):
    cfg = load_config(write(tmp_path, GOOD))
    a, b = cfg.lanes
    assert (a.name, a.url, a.model) == ("A", "http://127.0.0.1:8001/v1", "deepseek-v4.1-flash")
    assert a.defaults == {"temperature": 0} and a.headers == {"X-Team": "serving"}
    assert cfg.probe.interval == 2.5 and cfg.theme == "lanemon-light"
    monkeypatch.setenv("LANE_A_KEY", "sk-secret")
    assert a.api_key() == "sk-secret"
    assert "sk-secret" not in repr(a.public()) and "api_key_env" not in a.public()


@pytest.mark.parametrize(
    "text, field",
    [
        ('[lanes.A]\nurl = "ftp://x"\n', "lanes.A.url"),
        ('[lanes.A]\nurl = "http://h:99999/v1"\n', "lanes.A.url"),
        ('[lanes.A]\nurl = "http://h/v1"\nmodle = "x"\n', "'modle'"),
        ('[lanes.A]\nurl = "http://h/v1"\napi_key_env = "sk-abc def"\n', "lanes.A.api_key_env"),
        ('[probe]\ninterval = -1\n', "probe.interval"),
        ('[lanes."bad name"]\nurl = "http://h/v1"\n', "lanes.bad name"),
        ('colour = "red"\n', "'colour'"),
        ("[lanes.A\n", "invalid TOML"),
    ],
)
def test_bad_file_names_the_field(tmp_path, text, field):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    msg = str(info.value)
    assert field in msg and "\n" not in msg


def test_missing_explicit_file_is_an_error_but_missing_default_is_not(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty"))
    assert load_config().lanes == ()


def test_lane_args_override_and_extend(tmp_path):
    cfg = merge_lanes(load_config(write(tmp_path, GOOD)), ["A=http://10.0.0.1:9000/v1", "C=http://127.0.0.1:7000/v1"])
    lanes = {lane.name: lane for lane in cfg.lanes}
    assert lanes["A"].url == "http://10.0.0.1:9000/v1"
    assert lanes["A"].model == "deepseek-v4.1-flash"  # file settings kept
    assert set(lanes) == {"A", "B", "C"}


@pytest.mark.parametrize("arg", ["http://127.0.0.1:8001/v1", "A=", "A=localhost:8001", "=http://x/v1"])
def test_bad_lane_args(arg):
    with pytest.raises(ConfigError):
        parse_lane_arg(arg)


def test_public_lane_info_has_no_credentials():
    from lanemon.config import LaneConfig

    lane = LaneConfig("A", "http://user:s3cret@127.0.0.1:8001/v1?key=abc", api_key_env="K", headers={"X": "y"})
    pub = lane.public()
    assert pub == {"name": "A", "url": "http://127.0.0.1:8001/v1", "model": None}
