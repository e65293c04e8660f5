"""Upgrade checks: Milvus 2.6's streaming state (the pinned mq.type, an online WAL switch) and its WAL checkpoints as `mqctl channels checkpoints --etcd` judges them (DR402, DR502)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from mqctl.backends import BACKENDS
from mqctl.config.known_keys import parse_version
from mqctl.doctor.checks.examination import Examination, fix_value
from mqctl.doctor.verdict import OK
from mqctl.errors import MqctlError
from mqctl.findings import ERROR, INFO, WARNING, Finding

if TYPE_CHECKING:
    from mqctl.mq.streaming.state import StreamingState
    from mqctl.mq.streaming.wal_state import WalFiles


# --- upgrade -----------------------------------------------------------------------------------------------------
V2_5 = (2, 5, 0)


def upgrade_checks(exam: Examination) -> None:
    """What the next Milvus version changes here: natsmq gone in 2.6, mq.type pinned at 2.6's first boot; and,
    when etcd already holds 2.6 streaming state, what it pins and any online WAL switch under way."""
    from mqctl.backends import V2_6

    target, res = exam.target, exam.res
    running = target.mq.mq if target.mq else None
    mqs = {mq for mq in (running, res.effective_mq, res.attempted_mq, res.mq_type) if mq in BACKENDS}
    version = parse_version(target.version) if target.version else None
    streaming = _streaming_state(exam)
    on_2_6 = streaming is not None or (version is not None and version >= V2_6)
    if "natsmq" in mqs:
        fix = f"`{exam.migrate_command('rocksmq')}` before upgrading (standalone; pulsar or kafka for a cluster)"
        if on_2_6:
            severity, said = ERROR, "natsmq was removed in Milvus 2.6 (milvus #41564, PR #41565): this 2.6 Milvus "
            said += "cannot start on it"
            fix = fix_value(exam, "mq.type", streaming.pinned_mq if streaming and streaming.pinned_mq else "rocksmq")
        elif version is not None and version < V2_5:
            severity = INFO  # nothing to do on 2.3/2.4 until an upgrade is planned
            said = f"natsmq runs fine on Milvus {target.version}, but is deprecated in 2.5 and removed in 2.6 "
            said += "(milvus #41564): an upgrade to 2.6 has to move off it first"
        else:
            severity = WARNING
            said = "natsmq is deprecated in Milvus 2.5 and removed in 2.6 (milvus #41564): this Milvus cannot be "
            said += "upgraded to 2.6 on it"
        exam.add("upgrade", "DR500", severity, said, fix, impact="a 2.6 Milvus with mq.type natsmq panics at startup")
    elif mqs:
        exam.add("upgrade", "DR500", OK, f"{', '.join(sorted(mqs))} exists in Milvus 2.6 as well")
    if not on_2_6:
        upcoming = res.effective_mq or running or "the configured MQ"
        exam.add(
            "upgrade",
            "DR501",
            INFO,
            f"Milvus 2.6 writes mq.type into etcd at its first boot and ignores the yaml afterwards (PR #51543): "
            f"upgraded as it stands, it keeps {upcoming} for good; a later switch is the AlterWAL path "
            "(woodpecker <-> another MQ only, streaming enabled, an etcd config source)",
            "choose the MQ before upgrading; `mqctl migrate plan --to ...` shows the steps",
        )
    if streaming is not None:
        _streaming_checks(exam, streaming)
        wal_state_checks(exam, streaming)


def _streaming_state(exam: Examination) -> StreamingState | None:
    """The 2.6 streaming state of this Milvus's etcd, when it holds one (pchannel assignments, WAL checkpoints)."""
    from mqctl.mq.channel_checkpoints import on_streaming, streaming_state
    from mqctl.mq.milvus_meta import MetaReader

    if exam.etcd is None or exam.target.etcd_embedded is True:
        return None
    meta = (exam.res.value("etcd.metaSubPath") if exam.target.configs else None) or "meta"
    reader = MetaReader(exam.etcd, meta)
    try:
        return streaming_state(reader) if on_streaming(reader, None) else None
    except MqctlError as err:
        exam.add("upgrade", "DR502", WARNING, f"Milvus 2.6 streaming state in etcd not read: {err.message}", err.hint)
        return None


def _streaming_checks(exam: Examination, state: StreamingState) -> None:
    """DR502: etcd holds a 2.6 deployment's WAL state: the MQ pinned at first boot against the yaml, and an
    online WAL switch (AlterWAL, PR #45286) that has not finished."""
    from mqctl.mq.streaming import VERIFICATION

    res, shown = exam.res, exam.etcd.shown if exam.etcd else "URL"
    pchannels = sorted(set(state.pchannels) | set(state.wal_checkpoints))
    wals = sorted({cp.position.wal for cp in state.wal_checkpoints.values() if cp.position is not None})
    pinned = state.pinned_mq
    written = res.yaml_setting("mq.type") if exam.target.configs else None
    wrote = written.value.strip() if written is not None and written.value else None
    switching = {
        name: cp.alter_wal
        for name, cp in state.wal_checkpoints.items()
        if cp.alter_wal is not None and cp.alter_wal.stage != "none"
    }
    summary = (
        f"etcd {shown} holds Milvus 2.6 streaming state: {len(pchannels)} pchannel(s) on "
        f"{', '.join(wals) or 'an unknown WAL'}, mq.type pinned to {pinned or 'nothing yet'} ({state.pinned_key})"
    )
    details = [VERIFICATION, *(f"undecodable: {key}" for key in state.undecodable)]
    seen = False
    if switching:
        seen = True
        first = next(iter(switching.values()))
        exam.add(
            "upgrade",
            "DR502",
            WARNING,
            f"{summary}; an online WAL switch to {first.target} is at stage {first.stage} on "
            f"{len(switching)} pchannel(s) ({', '.join(sorted(switching)[:5])})",
            "let it finish before a restart, an upgrade or a config change (the coordinator drives it; "
            f"`mqctl channels checkpoints --etcd {shown}` shows each pchannel's stage)",
            impact="until every pchannel has switched, the deployment writes to two WALs; known problems after a "
            "switch: milvus #51497 (stale config), #52013 (WALNAME_MISMATCH on query nodes)",
            details=details,
        )
    if written is not None and pinned and wrote and wrote not in ("default", pinned):
        seen = True
        exam.add(
            "upgrade",
            "DR502",
            WARNING,
            f"{summary}; the yaml says mq.type {wrote} ({written.file}:{written.line}), which "
            "changes nothing: the pinned value wins over the yaml and the environment (milvus #50217, #49584)",
            f"{shlex.join(['mqctl', 'config', 'set', written.file or exam.config, 'mq.type', pinned, '--yes'])} "
            f"so the file says what runs; to change the MQ: `mqctl migrate plan --config {exam.config} --to {wrote}` "
            "(the online WAL switch)",
            impact=f"the operator's edit to {wrote} never takes effect: Milvus keeps {pinned}",
            details=details,
        )
    if not seen:
        exam.add("upgrade", "DR502", OK, f"{summary}; no online WAL switch under way", details=details)


def wal_state_checks(exam: Examination, state: StreamingState) -> None:
    """DR402: a 2.6 deployment's WAL checkpoints as `mqctl channels checkpoints --etcd` judges them (CP110 a
    checkpoint on another WAL than the pinned one, CP112 a loopback quorum, CP113 a truncator that does not follow,
    CP114 a dropped vchannel, CP115 an undecodable key), each finding with its fix. An AlterWAL left mid-way
    (CP111) is DR502's."""
    from mqctl.mq.streaming import VERIFICATION
    from mqctl.mq.streaming.checkpoint_model import RULE_ALTER_WAL_MIDWAY, RULE_NOTHING
    from mqctl.mq.streaming.wal_state import WOODPECKER_FILES, WOODPECKER_META, judge_wal_state

    assert exam.etcd is not None  # a streaming state was read from it
    res, shown = exam.res, exam.etcd.shown
    configs = exam.target.configs
    files = _woodpecker_files(exam, state)
    judged = judge_wal_state(
        state, exam.etcd, configured=lambda key: (res.value(key) if configs else None) or None, wal_files=files
    )
    report, location = judged.report, files.location if files is not None else None
    if files is not None and WOODPECKER_FILES not in judged.unread:
        exam.measured.read("woodpecker", True)
    if WOODPECKER_META in judged.unread:
        err = judged.unread[WOODPECKER_META]
        exam.add("checkpoints", "DR402", WARNING, f"Woodpecker's meta in etcd not read: {err.message}", err.hint)
        exam.measured.read("woodpecker", False, err.message)
    if WOODPECKER_FILES in judged.unread:
        location = None
        _files_unread(exam, judged.unread[WOODPECKER_FILES])
    exam.measured.streaming = report
    words = ["mqctl", "channels", "checkpoints", "--etcd", shown, "--etcd-root", exam.etcd.root]
    command = shlex.join(words + (["--woodpecker", location] if location else []))
    shown_codes = {RULE_ALTER_WAL_MIDWAY, RULE_NOTHING}
    by_code: dict[str, list[Finding]] = {}
    for finding in report.findings:
        if finding.code not in shown_codes:
            by_code.setdefault(finding.code, []).append(finding)
    for code, findings in sorted(by_code.items()):
        first = findings[0]
        more = f" (and {len(findings) - 1} more: {command})" if len(findings) > 1 else ""
        fix = f"{first.hint}; every row: `{command}`" if first.hint else f"every row: `{command}`"
        exam.add(
            "checkpoints",
            code,
            first.severity,
            first.message + more,
            fix if first.severity != INFO else None,
            details=[VERIFICATION, *(f.message for f in findings[1:])],
        )
    if not any(f.severity in (ERROR, WARNING) for group in by_code.values() for f in group):
        exam.add(
            "checkpoints",
            "DR402",
            OK,
            f"{len(report.pchannels)} pchannel(s) and {len(report.vchannels)} vchannel(s) of the 2.6 WAL state: "
            "every checkpoint on the pinned WAL"
            + (
                ", Woodpecker's quorum and truncation as expected"
                if judged.woodpecker and judged.woodpecker.logs
                else ""
            )
            + (
                f", what each needs still in the {len(judged.segments)} segment(s) at {location}"
                if location and judged.segments is not None
                else ""
            ),
            details=[VERIFICATION],
        )


def _woodpecker_files(exam: Examination, state: StreamingState) -> WalFiles | None:
    """Where the config says Milvus writes the Woodpecker segments (a local folder or its bucket), so DR402 can tell
    whether each checkpoint's entries are still stored (CP116) and the files are whole (CP117); None when the
    deployment is not on Woodpecker (or the config says no location: an info)."""
    from mqctl.mq.streaming.wal_state import WalFiles
    from mqctl.mq.woodpecker.location import woodpecker_location

    res = exam.res
    on_woodpecker = (state.pinned_mq or res.effective_mq) == "woodpecker"
    if not exam.target.configs or not on_woodpecker:
        return None
    try:
        found = woodpecker_location(res)
    except MqctlError as err:
        _files_unread(exam, err)
        return None
    return WalFiles(found.location, found.access)


def _files_unread(exam: Examination, err: MqctlError) -> None:
    """The Woodpecker files could not be found or read: said as an info, the checkpoints judged without them."""
    exam.measured.read("woodpecker", False, err.message)
    exam.add(
        "checkpoints",
        "DR402",
        INFO,
        f"the Woodpecker files were not read, so checkpoints are not compared with them: {err.message}",
        err.hint,
    )
