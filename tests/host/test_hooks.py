"""Operator hooks: Milvus's log read from an offset and a time, commands run without a shell unless asked."""

from __future__ import annotations

import datetime as dt

from mqctl.host.hooks import MilvusLog, log_time, run_command
from mqctl.migrate.verify import INIT_MQ

INIT = '[2026/11/22 05:03:46.032 +00:00] [INFO] [dependency/factory.go:84] ["try to init mq"] [standalone=true] [mqType=natsmq]'


def test_init_mq_line_and_log_time():
    found = INIT_MQ.search(INIT)
    assert found and found.group(1) == "natsmq"
    assert log_time(INIT) == dt.datetime(2026, 11, 22, 5, 3, 46, 32000, tzinfo=dt.timezone.utc)
    assert log_time("no time here") is None


def test_log_reads_only_after_offset_and_time(tmp_path):
    log = tmp_path / "milvus.log"
    log.write_text(INIT.replace("natsmq", "rocksmq") + "\n")
    reader = MilvusLog(file=str(log))
    offset = reader.mark()
    with log.open("a") as handle:
        handle.write(INIT + "\n")
    since = dt.datetime(2026, 11, 22, 5, 0, tzinfo=dt.timezone.utc)
    assert reader.lines_since(offset, since) == [INIT]
    assert reader.lines_since(0, since + dt.timedelta(hours=1)) == []
    by_command = MilvusLog(command=f"cat {log}")
    assert by_command.wait_for(lambda line: "mqType=natsmq" in line, offset=0, since=since, timeout=1) == INIT


def test_commands_run_without_a_shell_unless_asked():
    assert run_command("echo 'a b' $HOME").output_tail == "a b $HOME\n"
    assert run_command("echo $((1+2))", shell=True).output_tail == "3\n"
    missing = run_command("no-such-program-here")
    assert missing.returncode is None and "not found" in missing.output_tail
