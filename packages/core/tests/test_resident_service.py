"""One resident service per home, thin clients: start on demand, one owner, idle exit, stale records,
typed refusals, and nothing lost when the owner changes — through the real ``stratamem`` entry point."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from together import assert_all_ok, python_cmd, run_together

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.client import (
    ensure_service,
    live_socket,
    owner_record,
    read_serve_json,
)
from stratamem.contract.hostkit.home import pid_alive

STRATAMEM = str(Path(sys.executable).parent / "stratamem")
HEAVY = ("lancedb", "pyarrow", "numpy", "onnxruntime", "stratamem.core.local", "tokenizers")


def _home(tmp_path: Path, name: str = "h", extra: str = "") -> Path:
    home = tmp_path / name
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("embedding:\n  provider: none\n" + extra, encoding="utf-8")
    return home


def _heavy_loaded(code: str, *args: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; the heavy modules it ended up importing."""
    probe = "import json, sys\n" + code + "\nprint('MODULES=' + json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=300
    )
    line = [x for x in out.stdout.splitlines() if x.startswith("MODULES=")]
    assert line, out.stdout + out.stderr
    mods = json.loads(line[-1][len("MODULES=") :])
    return sorted(m for m in mods if m in HEAVY or m.split(".")[0] in HEAVY)


def _wait(predicate: object, timeout: float = 120.0) -> None:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_cli_search_help_and_version_import_nothing_heavy(tmp_path: Path) -> None:
    home = _home(tmp_path)
    ensure_service(home)  # warm service: the search itself runs there
    search = (
        "from stratamem.core.cli import main\n"
        "rc = main(['--home', sys.argv[1], 'search', 'anything', '--json'])\n"
        "assert rc == 0, rc\n"
    )
    assert _heavy_loaded(search, str(home)) == []
    for flag in ("--help", "--version"):
        code = (
            "from stratamem.core.cli import main\n"
            "try:\n    main([sys.argv[1]])\nexcept SystemExit:\n    pass\n"
        )
        assert _heavy_loaded(code, flag) == []


def test_thin_client_module_set_is_contract_and_grpc_only(tmp_path: Path) -> None:
    home = _home(tmp_path)
    code = (
        "import asyncio\n"
        "from stratamem.contract.hostkit.client import connect\n"
        "async def main():\n"
        "    core = await connect(sys.argv[1])\n"
        "    assert (await core.health()).ok\n"
        "    await core.shutdown()\n"
        "asyncio.run(main())\n"
    )
    assert _heavy_loaded(code, str(home)) == []


def test_first_client_starts_a_detached_service_later_clients_share_it(tmp_path: Path) -> None:
    home = _home(tmp_path)
    out = subprocess.run(
        [STRATAMEM, "--home", str(home), "health"], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    owner = owner_record(home)
    assert owner is not None  # the service outlived the command that started it
    pid = owner["pid"]
    assert os.getsid(pid) == pid and os.getpgid(pid) == pid  # own session and process group
    assert (home / "logs" / "serve.log").exists()
    again = subprocess.run(
        [STRATAMEM, "--home", str(home), "health"], capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    assert owner_record(home)["pid"] == pid  # type: ignore[index]


def test_two_clients_racing_to_start_end_with_exactly_one_server(tmp_path: Path) -> None:
    home = _home(tmp_path)
    code = (
        "import json, sys\n"
        "from stratamem.contract.hostkit.client import ensure_service, owner_record\n"
        "from pathlib import Path\n"
        "sock = ensure_service(sys.argv[1])\n"
        "print(json.dumps({'socket': sock, 'pid': owner_record(Path(sys.argv[1]))['pid']}))\n"
    )
    finished = run_together(
        {f"client{i}": python_cmd(code, str(home)) for i in range(3)}, deadline_s=300
    )
    assert_all_ok(finished)
    results = [json.loads(r.stdout) for r in finished.values()]
    assert len({r["pid"] for r in results}) == 1
    log = (home / "logs" / "serve.log").read_text()
    assert "already served" not in log  # nobody started a second server that had to give up


def test_idle_service_exits_and_releases_the_home_then_the_next_client_starts_one(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path, extra="server:\n  idle_exit_s: 2\n")
    first = ensure_service(home)
    pid = owner_record(home)["pid"]  # type: ignore[index]
    _wait(lambda: owner_record(home) is None)
    assert not (home / "run" / "serve.json").exists() and not Path(first).exists()
    _wait(lambda: not pid_alive(pid))  # and the process is gone
    ensure_service(home)
    assert owner_record(home)["pid"] != pid  # type: ignore[index]


def test_an_open_event_stream_keeps_the_service_from_idling_out(tmp_path: Path) -> None:
    import asyncio

    from stratamem.contract.hostkit.client import connect

    home = _home(tmp_path, extra="server:\n  idle_exit_s: 1\n")

    async def main() -> None:
        core = await connect(home)
        events = core.subscribe_events()
        task = asyncio.ensure_future(anext(events))
        # calls keep the service busy until the stream is live (its first event arrives), so no
        # idle window can fall between connecting and the stream opening, however slow the machine
        n = 0
        while not task.done():
            # a new session each time: reopening one emits no event, so a stream that went live
            # after the first call's event would wait forever (hung under load)
            n += 1
            await core.open_session("idle-test", session_id=f"idle-s{n}")
            await asyncio.wait({task}, timeout=0.2)
        await asyncio.sleep(4)  # four idle windows with nothing but the stream open
        assert owner_record(home) is not None  # stream open: not idle
        await core.shutdown()

    asyncio.run(main())
    _wait(lambda: owner_record(home) is None, 60)


def test_stale_serve_json_and_socket_from_a_dead_owner_are_replaced(tmp_path: Path) -> None:
    home = _home(tmp_path)
    run = home / "run"
    run.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], text=True, capture_output=True
    ).stdout.strip()
    stale_sock = run / "stratamem.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(stale_sock))
    s.close()  # the file stays, nothing listens: connecting is refused
    (run / "serve.json").write_text(json.dumps({"pid": int(dead), "socket": str(stale_sock)}))
    (home / "owner.lock").write_text(json.dumps({"pid": int(dead), "socket": str(stale_sock)}))
    assert live_socket(home) is None
    sock = ensure_service(home)
    # the service advertises its socket in owner.lock, then writes serve.json: the client may be
    # answered in between (ordering, seen under load), so wait for the record naming the owner
    owner_pid = (owner_record(home) or {}).get("pid")
    _wait(lambda: (read_serve_json(home) or {}).get("pid") == owner_pid, 60)
    info = json.loads((run / "serve.json").read_text())
    # a new service wrote its own record (pid_max is small: the dead pid may be reused by it)
    assert info.get("epoch") and info.get("started_at")
    assert info["pid"] == owner_record(home)["pid"] and pid_alive(info["pid"])  # type: ignore[index]
    assert live_socket(home) == sock


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [("contract_version", "9.9.0", "9.9.0"), ("uid", os.getuid() + 1, "another user")],
)
def test_a_home_served_by_another_version_or_user_is_a_typed_error(
    tmp_path: Path, field: str, value: object, words: str
) -> None:
    home = _home(tmp_path)
    ensure_service(home)
    _wait(lambda: '"ready": true' in (home / "logs" / "serve.log").read_text())  # last write done
    serve_json = home / "run" / "serve.json"
    info = json.loads(serve_json.read_text())
    serve_json.write_text(json.dumps({**info, field: value}))
    with pytest.raises(StratamemError) as err:
        ensure_service(home, 5)
    assert err.value.code is ErrorCode.HOME_LOCKED and words in err.value.message
    out = subprocess.run(
        [STRATAMEM, "--home", str(home), "search", "x"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1 and "home_locked" in out.stderr and words in out.stderr


def test_another_version_is_refused_before_serve_json_is_written(tmp_path: Path) -> None:
    """Between ``owner.lock`` (socket advertised) and ``serve.json``, the old client took the
    socket without any version check and met the other contract on the wire; now the owner
    record carries the contract version, and a mismatch is ``home_locked`` at once."""
    home = _home(tmp_path)
    ensure_service(home)
    _wait(lambda: '"ready": true' in (home / "logs" / "serve.log").read_text())  # last write done
    record = owner_record(home)
    assert (
        record is not None and record.get("contract_version") and record.get("uid") == os.getuid()
    )
    (home / "run" / "serve.json").unlink()  # the window: serve.json not written yet
    fd = os.open(home / "owner.lock", os.O_WRONLY)  # the owner still holds its lock
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({**record, "contract_version": "9.9.0"}).encode(), 0)
    finally:
        os.close(fd)
    with pytest.raises(StratamemError) as err:
        ensure_service(home, 5)
    assert err.value.code is ErrorCode.HOME_LOCKED and "9.9.0" in err.value.message
    # a record that does not say (an owner older than the field) waits for serve.json instead
    fd = os.open(home / "owner.lock", os.O_WRONLY)
    try:
        os.ftruncate(fd, 0)
        legacy = {k: v for k, v in record.items() if k != "contract_version"}
        os.pwrite(fd, json.dumps(legacy).encode(), 0)
    finally:
        os.close(fd)
    assert live_socket(home) is None


def test_a_service_that_cannot_start_within_the_budget_is_a_typed_error_quickly(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    started = time.monotonic()
    with pytest.raises(StratamemError) as err:
        ensure_service(home, 0.01)
    assert err.value.code is ErrorCode.TRANSPORT_CLOSED
    assert time.monotonic() - started < 30  # generous: it did not wait for the engine


def test_second_serve_on_an_owned_home_exits_3_naming_pid_and_socket(tmp_path: Path) -> None:
    home = _home(tmp_path)
    sock = ensure_service(home)
    pid = owner_record(home)["pid"]  # type: ignore[index]
    out = subprocess.run(
        [STRATAMEM, "serve", "--home", str(home)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 3 and str(pid) in out.stderr and sock in out.stderr


def _lines(tag: str, n: int) -> str:
    return "".join(
        json.dumps(
            {
                "session": f"{tag}-{i // 10}",
                "user": f"{tag} fact number {i}: the locker code is {tag}{i:04d}",
                "assistant": "Noted.",
                "ts": 1_700_000_000_000 + i * 1000,
            }
        )
        + "\n"
        for i in range(n)
    )


def _ingest_cmds(tmp_path: Path, home: Path, n: int) -> dict[str, list[str]]:
    cmds = {}
    for tag in ("alpha", "beta"):
        src = tmp_path / f"{tag}.jsonl"
        src.write_text(_lines(tag, n))
        cmds[tag] = [STRATAMEM, "--home", str(home), "ingest", str(src), "--no-progress"]
    return cmds


def _ingest_pair(tmp_path: Path, home: Path, n: int) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for cmd in _ingest_cmds(tmp_path, home, n).values()
    ]


def _stored_user_texts(home: Path) -> list[str]:
    out = subprocess.run(
        [STRATAMEM, "--home", str(home), "export"], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return [t["user_text"] for t in json.loads(out.stdout)["traces"]]


def test_two_concurrent_ingests_store_every_line_once_and_both_exit_0(tmp_path: Path) -> None:
    home = _home(tmp_path)
    assert_all_ok(run_together(_ingest_cmds(tmp_path, home, 40), deadline_s=600))
    texts = _stored_user_texts(home)
    assert len(texts) == 80 and len(set(texts)) == 80


def test_owner_sigkilled_mid_ingest_loses_nothing_and_duplicates_nothing(
    tmp_path: Path, stop_services: Callable[[Path], None]
) -> None:
    home = _home(tmp_path)
    procs = _ingest_pair(tmp_path, home, 150)
    _wait(lambda: live_socket(home) is not None, 300)
    time.sleep(1.0)
    first = owner_record(home)["pid"]  # type: ignore[index]
    assert any(p.poll() is None for p in procs), "ingest finished before the kill: test is void"
    os.kill(first, signal.SIGKILL)
    outs = [p.communicate(timeout=900) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    assert owner_record(home)["pid"] != first  # type: ignore[index]  # a new service took over
    texts = _stored_user_texts(home)
    assert len(texts) == 300 and len(set(texts)) == 300
    stop_services(tmp_path)


def test_a_service_that_exits_at_start_is_named_with_its_reason(tmp_path: Path) -> None:
    home = _home(tmp_path, extra="server:\n  idle_exit_s: soon\n")  # config_invalid: serve exits 2
    with pytest.raises(StratamemError) as err:
        ensure_service(home, 120)
    assert err.value.code is ErrorCode.TRANSPORT_CLOSED
    assert err.value.details["exit_code"] == 2 and "config_invalid" in err.value.message
    assert owner_record(home) is None
