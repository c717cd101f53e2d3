"""``stratamem reembed``: re-embed a home after an embedding model change (the home must be idle)."""

from __future__ import annotations

import argparse
import json
import sys

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.commands.common import reads_home


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


@reads_home
def run(args: argparse.Namespace) -> int:
    from stratamem.core.config.loader import load_config
    from stratamem.core.embedding import load_embedder
    from stratamem.core.home import prepare_home, resolve_home
    from stratamem.core.storage.lock import HomeLock
    from stratamem.core.storage.reembed import reembed_store

    tty = sys.stderr.isatty()
    bar: list[str] = []  # a \r-updated line is open on the terminal
    try:
        home = prepare_home(resolve_home(getattr(args, "home", None)))
        cfg = load_config(home)
        try:
            lock = HomeLock(home).acquire()
        except StratamemError as exc:
            if exc.code is ErrorCode.HOME_LOCKED:
                raise StratamemError(
                    exc.code,
                    f"{exc.message}; reembed rewrites the store itself: run `stratamem stop` first",
                    exc.details,
                ) from None
            raise
        try:
            embedder = load_embedder(cfg["embedding"])

            def progress(table: str, done: int, total: int) -> None:
                if tty:  # one line updated in place
                    print(f"\r{table}: {done}/{total}", end="", file=sys.stderr, flush=True)
                    bar[:] = [table]
                elif done == total:  # a log gets one line per table, no \r runs
                    print(f"{table}: {done}/{total} re-embedded", file=sys.stderr, flush=True)

            counts = reembed_store(
                home / "data" / "lance",
                embedder.embed_documents,
                int(embedder.dimension),
                str(embedder.model),
                progress,
            )
        finally:
            lock.release()
    except StratamemError as exc:
        end = "\n" if bar else ""
        print(f"{end}stratamem: error [{exc.code.value}] {exc.message}", file=sys.stderr)
        return 1
    if bar:
        print(file=sys.stderr)
    print(
        json.dumps({"reembedded": counts, "model": embedder.model, "dimension": embedder.dimension})
    )
    return 0
