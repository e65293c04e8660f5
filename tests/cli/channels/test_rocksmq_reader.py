"""`channels list/peek --rocksmq` on a copy of the RocksMQ fixture whose topic names hold a slash, Rich markup or
Unicode (the reader itself: tests/mq/rocksmq/test_reader.py)."""

from __future__ import annotations

import shutil

from tests.helpers.paths import FIXTURES

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"


def test_topic_names_with_a_slash_markup_or_unicode(cli, tmp_path):
    """Topics `a` and `a/b` keep their own messages (a key is `<topic>/<id>`); names print as they are."""
    from rocksdict import Options, Rdict

    root = tmp_path / "rdb_data"
    shutil.copytree(ROCKSMQ, root)
    db = Rdict(str(root), options=Options(raw_mode=True))
    value = db[next(iter(db.keys()))]
    odd = {"a": 3, "a/b": 2, "a/1": 1, "[bold]x[/bold] ünï": 1}
    for topic, count in odd.items():
        for n in range(count):
            db[f"{topic}/{470633384162886000 + n}".encode()] = value
    db.close()
    listed = cli("channels", "list", "--rocksmq", str(root), "--json")
    counts = {c["name"]: (c["messages"], c["first_id"], c["last_id"]) for c in listed.json()["channels"]}
    for topic, count in odd.items():
        assert counts[topic] == (count, 470633384162886000, 470633384162886000 + count - 1), topic
    peeked = cli("channels", "peek", "a", "--rocksmq", str(root), "--json")
    assert [m["id"] for m in peeked.json()["messages"]] == [470633384162886000 + n for n in range(3)]
    table = cli("channels", "list", "--rocksmq", str(root))
    assert "[bold]x[/bold] ünï" in table.stdout
    shown = cli("channels", "show", "[bold]x[/bold] ünï", "--rocksmq", str(root))
    assert "[bold]x[/bold] ünï" in shown.stdout, shown.stderr
    missing = cli("channels", "show", "[red]gone[/red]", "--rocksmq", str(root))
    assert missing.code == 2 and "no channel '[red]gone[/red]'" in missing.stderr
