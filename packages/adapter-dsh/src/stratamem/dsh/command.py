"""``stratamem dsh install``: its arguments and what it does. Imported only when the command is
chosen (``plugin.py`` names it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="dsh_action", metavar="ACTION", required=True)
    p = sub.add_parser(
        "install",
        help="install the plugin under the DSH home, then print or write the bundle patch adding it",
    )
    p.add_argument("--dsh-home", default=None, help="DSH home (default: $DSH_HOME or ~/.dsh)")
    p.add_argument("--profile", default="default", help="DSH profile to patch")
    p.add_argument(
        "--write",
        default=None,
        metavar="PATH",
        help="write the patch to PATH ('-' or absent: print it on stdout)",
    )
    p.add_argument("--command", default=None, help="command that starts `stratamem serve`")
    p.add_argument(
        "--plugin-dir", default=None, help="where to install the plugin (default: <home>/plugin)"
    )
    p.add_argument(
        "--skip-npm",
        "--no-npm",  # the first spelling; OpenClaw's installer says --skip-npm
        dest="skip_npm",
        action="store_true",
        help="do not run npm install for its gRPC client",
    )


def run(args: argparse.Namespace) -> int:
    from stratamem.contract.errors import StratamemError
    from stratamem.dsh import install

    try:
        target = Path(args.plugin_dir).absolute() if args.plugin_dir else None
        target = target or install.plugin_dir(args.dsh_home)
        changes = install.install_plugin(target, run_npm=not args.skip_npm)
        print(
            json.dumps({"action": "install", "plugin": str(target), "changes": changes}),
            file=sys.stderr,
        )
        patch = install.bundle_patch(
            dsh_home=args.dsh_home,
            profile=args.profile,
            command=args.command,
            plugin=target / install.plugin_entry().name,
        )
        if args.write and args.write != "-":
            path = install.write_patch(patch, args.write)
            print(json.dumps({"action": "install", "written": str(path)}))
        else:
            sys.stdout.write(patch)
    except StratamemError as exc:
        print(json.dumps({"error": exc.to_dict()}), file=sys.stderr)
        return 1
    return 0
