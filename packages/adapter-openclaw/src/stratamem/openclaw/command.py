"""``stratamem openclaw install|uninstall``: its arguments and what it does. Imported only when
the command is chosen (``plugin.py`` names it).
"""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="openclaw_action", metavar="ACTION", required=True)
    for action, help_text in (
        ("install", "install the Stratamem memory plugin into OpenClaw and select it"),
        ("uninstall", "remove the plugin and undo the openclaw.json changes"),
    ):
        p = sub.add_parser(action, help=help_text)
        p.add_argument(
            "--openclaw-home", default=None, help="the .openclaw directory (default ~/.openclaw)"
        )
        p.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
        if action == "install":
            p.add_argument(
                "--skip-npm", action="store_true", help="do not run npm install in the plugin"
            )


def run(args: argparse.Namespace) -> int:
    from stratamem.contract.errors import StratamemError
    from stratamem.openclaw import install as inst

    try:
        if args.openclaw_action == "install":
            report = inst.install(
                args.openclaw_home, dry_run=args.dry_run, run_npm=not args.skip_npm
            )
        else:
            report = inst.uninstall(args.openclaw_home, dry_run=args.dry_run)
    except StratamemError as exc:
        print(json.dumps({"error": exc.to_dict()}), file=sys.stderr)
        return 1
    for line in report.changes:
        print(line, file=sys.stderr)
    print(json.dumps({"action": args.openclaw_action, **report.to_dict()}))
    return 0
