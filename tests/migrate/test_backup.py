"""Backup archives of the MQ data: round trip and tamper detection."""

from __future__ import annotations

import pytest

from mqctl.errors import PreconditionError
from mqctl.migrate.backup import archive_dirs, restore_archive, verify_archive


def test_backup_round_trip_and_tamper_detection(tmp_path):
    data = tmp_path / "rdb_data"
    (data / "sub").mkdir(parents=True)
    (data / "000005.log").write_bytes(b"wal" * 1000)
    (data / "sub" / "CURRENT").write_text("MANIFEST-000004\n")
    made = archive_dirs([data], tmp_path / "backup", "rocksmq-test")
    assert made["files"] == 2 and made["bytes"] == 3000 + 16
    verify_archive(tmp_path / "backup" / "mq-rocksmq-test.tar.gz", made["manifest"])
    tampered = {k: {**v, "sha256": "0" * 64} for k, v in made["manifest"].items()}
    with pytest.raises(PreconditionError, match="does not match"):
        verify_archive(tmp_path / "backup" / "mq-rocksmq-test.tar.gz", tampered)
    with pytest.raises(PreconditionError, match="not empty"):
        restore_archive(tmp_path / "backup" / "mq-rocksmq-test.tar.gz", made["manifest"], made["dirs"])
    import shutil

    shutil.rmtree(data)
    restore_archive(tmp_path / "backup" / "mq-rocksmq-test.tar.gz", made["manifest"], made["dirs"])
    assert (data / "000005.log").read_bytes() == b"wal" * 1000
