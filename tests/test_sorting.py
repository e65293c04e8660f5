"""Natural sort order of channel names."""

from __future__ import annotations


def test_natural_key_takes_only_ascii_digits_as_numbers():
    from mqctl.sorting import ascii_int, natural_key

    assert sorted(["dml_10", "dml_2", "dml_1²", "dml_1"], key=natural_key) == ["dml_1", "dml_1²", "dml_2", "dml_10"]
    assert natural_key("1²") == ["", 1, "²"]
    assert [ascii_int(t) for t in ("42", "²", "①", "", "4 2", "-1")] == [42, None, None, None, None, None]
