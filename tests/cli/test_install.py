"""mqctl installed like other CLIs: `python -m build` makes an sdist and a wheel (built from the sdist, so the
sdist is complete), and the wheel installed into a fresh virtual environment, run from a folder with no checkout
in it, answers --help and --version, completes in bash, and runs real commands on files outside the repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import FIXTURES, REPO, SAMPLES

pytestmark = pytest.mark.extra  # build and setuptools>=68 of .[test]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """One build and one install for the module: the venv's mqctl script and an environment without the checkout.
    The wheel is installed without its dependencies, which the venv borrows from this interpreter's site-packages
    through a .pth line (a path line adds no .pth of that folder, so this checkout's editable install stays out)."""
    work = tmp_path_factory.mktemp("install")
    dist = work / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(REPO)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = dist.glob("mqctl-*.whl")
    assert len(list(dist.glob("mqctl-*.tar.gz"))) == 1
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    site = Path(subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())  # fmt: skip
    (site / "borrowed-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}:{env.get('PATH', '')}", NO_COLOR="1", HOME=str(work))
    yield venv / "bin" / "mqctl", env


def run(installed: tuple[Path, dict[str, str]], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script, env = installed
    return subprocess.run(
        [str(script), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300, stdin=subprocess.DEVNULL,
        check=False,
    )  # fmt: skip


def test_the_installed_wheel_runs_from_outside_the_checkout(installed, tmp_path):
    script, env = installed
    where = subprocess.run(
        [str(script.parent / "python"), "-c", "import mqctl; print(mqctl.__file__)"],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=True,
    ).stdout.strip()  # fmt: skip
    assert where.startswith(str(script.parent.parent)) and not where.startswith(str(REPO))
    pom = subprocess.run(  # `sandbox up --mq kafka` resolves the broker's jars with the pom the wheel ships
        [str(script.parent / "python"), "-c", "from mqctl.sandbox import kafka; print(kafka.POM, kafka.kafka_version())"],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=True,
    ).stdout.split()  # fmt: skip
    assert pom[0].startswith(str(script.parent.parent)) and Path(pom[0]).is_file() and pom[1].startswith("4.")

    helped = run(installed, tmp_path, "--help")
    assert helped.returncode == 0 and "exporter" in helped.stdout and "bundle" in helped.stdout
    version = run(installed, tmp_path, "--version")
    from mqctl import __version__

    assert version.returncode == 0 and __version__ in version.stdout

    config = tmp_path / "milvus.yaml"
    config.write_text((SAMPLES / "milvus-2.3-standalone-rocksmq.yaml").read_text())
    explained = run(installed, tmp_path, "config", "explain", str(config), "--json")
    assert explained.returncode == 0, explained.stderr
    assert '"effective_mq": "rocksmq"' in explained.stdout

    rocksmq = tmp_path / "rdb_data"
    shutil.copytree(FIXTURES / "rocksmq" / "rdb_data", rocksmq)
    metrics = run(installed, tmp_path, "doctor", "--rocksmq", str(rocksmq), "--format", "prometheus")
    assert metrics.returncode == 0, metrics.stderr
    assert 'mqctl_channel_messages{channel="by-dev-rootcoord-dml_0",mq="rocksmq"}' in metrics.stdout
    script, env = installed
    completion = {**env, "_MQCTL_COMPLETE": "bash_complete", "COMP_WORDS": "mqctl exporter --li", "COMP_CWORD": "2"}
    completed = subprocess.run([str(script)], capture_output=True, text=True, env=completion, cwd=tmp_path, check=False)
    assert completed.returncode == 0 and completed.stdout.split() == ["plain,--listen"], completed
    source = subprocess.run(
        [str(script)], capture_output=True, text=True, env={**env, "_MQCTL_COMPLETE": "bash_source"}, check=False
    )
    assert "complete -o nosort -F _mqctl_completion mqctl" in source.stdout
    bad = run(installed, tmp_path, "doctor", "--format", "nagios", "--pid", "999999999")
    assert bad.returncode == 3 and bad.stdout.startswith("MQCTL UNKNOWN") and "Traceback" not in bad.stderr


@pytest.mark.milvus
def test_the_installed_wheel_runs_the_sandbox_from_its_own_package(installed, tmp_path):
    """`sandbox up/status/down` from the wheel, in a folder with no checkout: the embedded Milvus, its config and
    etcd are found through the installed packages, never through the repository."""
    folder = tmp_path / "sbx"
    up = run(installed, tmp_path, "sandbox", "up", "--dir", str(folder), "--json")
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        assert str(REPO) not in up.stdout
        status = run(installed, tmp_path, "sandbox", "status", "--dir", str(folder), "--json")
        assert status.returncode == 0 and '"running": true' in status.stdout, status.stdout
    finally:
        down = run(installed, tmp_path, "sandbox", "down", "--dir", str(folder), "--json")
    assert down.returncode == 0, down.stderr[-2000:]
