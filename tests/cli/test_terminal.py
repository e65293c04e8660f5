"""The output layer's safety net: passwords inside URLs and broker lists never reach the screen."""

import pytest

from mqctl.secrets import mask_url_passwords


@pytest.mark.parametrize(
    "text, shown",
    [
        ("pulsar+ssl://admin:S3cret@broker:6651", "pulsar+ssl://admin:******@broker:6651"),
        ("pulsar://admin:pa/ss@pulsar:6650", "pulsar://admin:******@pulsar:6650"),  # a '/' in the password
        ("http://root:p@ss@etcd:2379/v3", "http://root:******@etcd:2379/v3"),  # an '@' in it: up to the last one
        ("user:KPW2@b:9092,u2:x@c:1", "user:******@b:9092,u2:******@c:1"),  # a Kafka broker list
        ("address = 'nats://u:tok@127.0.0.1:4222'", "address = 'nats://u:******@127.0.0.1:4222'"),
        ("http://u:******@h", "http://u:******@h"),  # already masked: unchanged
        ("ops@example.com and http://host:9091/healthz", "ops@example.com and http://host:9091/healthz"),
    ],
)
def test_passwords_in_urls_are_masked(text, shown):
    assert mask_url_passwords(text) == shown


@pytest.mark.parametrize(
    "seconds, shown",
    [
        (42, "42s"),
        (59.4, "59s"),
        (180, "3m"),
        (3599, "59m"),
        (3600 * 5.2, "5.2h"),
        (3600 * 15, "15h"),
        (86400 * 1.3, "1.3d"),
        (86400 * 12, "12d"),
        (-180, "-3m"),
        (None, ""),
    ],
)
def test_ages_read_like_kubectl(seconds, shown):
    from mqctl.cli.terminal import format_age

    assert format_age(seconds) == shown


def render(table, width: int) -> list[str]:
    from rich.console import Console

    console = Console(width=width, no_color=True, markup=False)
    with console.capture() as capture:
        console.print(table, crop=False)
    return capture.get().splitlines()


def test_columns_give_way_in_their_priority_and_pairs_go_together():
    """The key stays whole at any width; of the rest, priority 0 stays and higher numbers are hidden first."""
    from mqctl.cli.terminal import KEY, LABEL, NUMBER, TEXT, Column, FitTable

    name = "by-dev-rootcoord-dml_10"
    columns = [
        Column("stream", KEY),
        Column("status", LABEL, 0),
        Column("conf", LABEL, 1),
        Column("actual", LABEL, 1),
        Column("messages", NUMBER, 2),
        Column("note", TEXT, 0),
    ]
    table = FitTable("t", columns, [[name, "DRIFT", "4320 min", "unlimited", 121, "word " * 30]], None)
    lines = render(table, 60)
    assert max(len(line) for line in lines) <= 60
    assert any(f"│ {name} │ DRIFT  │" in line for line in lines)
    assert not any("4320 min" in line or "unlimited" in line for line in lines)  # conf and actual go together
    assert "not shown at 60 columns: conf, actual, messages (--wide shows all)" in " ".join(
        line.strip() for line in lines
    )

    lines = render(table, 20)  # narrower than the key: the key is still whole, nothing else is shown
    assert any(f"│ {name} │" in line for line in lines)
    assert not any("DRIFT" in line for line in lines)


def test_long_ids_only_with_wide_and_times_as_ages():
    import datetime as dt

    from mqctl import clock
    from mqctl.cli.terminal import ID, KEY, TIME, Column, FitTable

    when = clock.now() - dt.timedelta(minutes=3, seconds=5)
    columns = [
        Column("channel", KEY),
        Column("first id", ID),
        Column("seq", ID),
        Column("age", TIME, wide_header="time (UTC)"),
    ]
    table = FitTable(None, columns, [["dml_0", 470633384162885633, 121, when]], None)
    text = "\n".join(render(table, 200))
    assert "470633384162885633" not in text and "121" in text and "│  3m │" in text
    table.wide = True
    text = "\n".join(render(table, 20))
    assert "470633384162885633" in text and when.strftime("%Y-%m-%d %H:%M:%S") in text and "time (UTC)" in text
