"""`mqctl sandbox`: a real embedded Milvus 2.3.5 to rehearse migrations on."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqctl.cli.common import output, seconds
from mqctl.cli.measure import MeasureOpt

if TYPE_CHECKING:
    from mqctl.cli.terminal import FitTable
    from mqctl.sandbox.rehearse import Rehearsal
    from mqctl.sandbox.server import SandboxInfo

app = typer.Typer(help="Run a real embedded Milvus 2.3.5 to rehearse migrations on.", no_args_is_help=True)

DirOpt = Annotated[Path, typer.Option("--dir", help="Sandbox folder (created on first `up`).")]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", callback=seconds(86_400, positive=True), help="Seconds to wait for Milvus.")
]
ExternalEtcdOpt = Annotated[
    bool,
    typer.Option(
        "--external-etcd", help="Run a real etcd server for Milvus (the production topology); only for a new sandbox."
    ),
]


def _render_info(info: SandboxInfo) -> FitTable:
    from mqctl.cli.terminal import KEY, TEXT, Column, Output

    rows = [
        ("running", "yes" if info.running else "no"),
        ("mq", info.mq),
        ("pid", info.pid),
        ("uri", info.uri),
        ("config", info.config),
        ("log", info.log),
        ("etcd", f"{info.etcd} ({info.etcd_mode})"),
        *(
            [("kafka", info.kafka + (f" (own broker, pid {info.kafka_pid})" if info.kafka_pid else ""))]
            if info.kafka
            else []
        ),
        ("health_url", info.health_url),
        ("stop_cmd", info.stop_cmd),
        ("start_cmd", info.start_cmd),
    ]
    rows += [(f"seeded {name}", f"{count} rows") for name, count in info.seeded.items()]
    return Output.table(f"sandbox {info.dir}", [Column("setting", KEY), Column("value", TEXT)], rows, show_header=False)


@app.command()
def up(
    directory: DirOpt,
    mq: Annotated[
        str | None, typer.Option("--mq", help="rocksmq (default), natsmq or kafka; only for a new sandbox.")
    ] = None,
    kafka: Annotated[
        str | None,
        typer.Option(
            "--kafka",
            help="With --mq kafka: the HOST:PORT of a running broker (default: the sandbox starts its own; "
            "needs Java 17+, and Maven once for its jars).",
        ),
    ] = None,
    seed: Annotated[bool, typer.Option("--seed", help="Create two demo collections with inserts and deletes.")] = False,
    timeout: TimeoutOpt = 180,
    external_etcd: ExternalEtcdOpt = False,
) -> None:
    """Create (first time) and start the sandbox, wait for health, print how to reach it."""
    from mqctl.sandbox import server as sandbox

    out = output()
    out.info(f"starting Milvus 2.3.5 in {directory} ...")
    out.emit(
        sandbox.up(str(directory), mq=mq, seed=seed, timeout=timeout, external_etcd=external_etcd, kafka=kafka),
        _render_info,
    )


@app.command()
def down(
    directory: DirOpt,
    timeout: TimeoutOpt = 5,
    keep_etcd: Annotated[
        bool,
        typer.Option(
            "--keep-etcd", help="Leave the sandbox's own etcd server running (Milvus alone stops, as in production)."
        ),
    ] = False,
    keep_kafka: Annotated[
        bool, typer.Option("--keep-kafka", help="Leave the sandbox's own Kafka broker running (Milvus alone stops).")
    ] = False,
) -> None:
    """Stop the sandbox's Milvus (SIGTERM, SIGKILL after --timeout), its own etcd and Kafka broker; its data stays."""
    from mqctl.sandbox import server as sandbox

    output().emit(
        sandbox.down(str(directory), timeout=timeout, keep_etcd=keep_etcd, keep_kafka=keep_kafka), _render_info
    )


@app.command()
def status(directory: DirOpt) -> None:
    """Where the sandbox is, whether it runs and on which MQ."""
    from mqctl.sandbox import server as sandbox

    output().emit(sandbox.status(str(directory)), _render_info)


def _render_rehearsal(result: Rehearsal) -> list[Any]:
    from mqctl.cli.migrate.render import render_journal
    from mqctl.cli.terminal import KEY, LABEL, NUMBER, Column, Output

    before, after = result.counts_before, result.counts_after
    items: list[Any] = render_journal(result.journal)
    items.append(
        Output.table(
            "row counts before / after the switch",
            [
                Column("collection", KEY),
                Column("before", NUMBER, 0),
                Column("after", NUMBER, 0),
                Column("equal", LABEL, 0),
            ],
            [
                (
                    n,
                    before[n]["rows"],
                    after.get(n, {}).get("rows"),
                    "yes" if before[n]["rows"] == after.get(n, {}).get("rows") else "NO",
                )
                for n in before
            ],
        )
    )
    items.append(
        Output.table(
            f"new NATS JetStream streams ({len(result.streams)})",
            [Column("stream", KEY), Column("messages", NUMBER, 0), Column("bytes", NUMBER, 1)],
            [(s.name, s.messages, s.bytes) for s in result.streams],
        )
    )
    if result.measured is not None:
        from mqctl.cli.measure import render_measured

        items.append(render_measured(result.measured))
    items.append(
        Output.table("timings", [Column("phase", KEY), Column("seconds", NUMBER, 0)], list(result.seconds.items()))
    )
    where = f"sandbox kept in {result.dir}" if result.kept else "temporary sandbox removed"
    items.append(
        f"Rehearsal passed: every step verified, no row lost; {where}. A production run journals the same "
        "steps: see docs/migrate.md, 'Migrating a production Milvus, step by step'."
    )
    return items


@app.command()
def rehearse(
    directory: Annotated[
        Path | None, typer.Option("--dir", help="Sandbox folder (default: a temporary one, removed after).")
    ] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary sandbox folder.")] = False,
    external_etcd: ExternalEtcdOpt = False,
    measure: MeasureOpt = False,
) -> None:
    """The main job on one machine: sandbox up on RocksMQ with data, migrate to natsmq, list the NATS streams, down."""
    from mqctl.cli.migrate.render import reporter
    from mqctl.milvus.measure import MeasureSettings
    from mqctl.sandbox.rehearse import rehearse as run_rehearsal

    out = output()
    result = run_rehearsal(
        str(directory) if directory else None,
        reporter(out),
        out.info,
        keep=keep,
        external_etcd=external_etcd,
        measure=MeasureSettings() if measure else None,
    )
    out.emit(result.to_dict(), lambda _: _render_rehearsal(result))
