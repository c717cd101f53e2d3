"""``stratamem hermes install|uninstall``: its arguments and what it does. Imported only when
the command is chosen (``plugin.py`` names it); Hermes itself is never imported here.
"""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="hermes_action", metavar="ACTION", required=True)
    for action, help_text in (
        ("install", "install the Stratamem memory provider into Hermes and select it"),
        ("uninstall", "remove the provider folder and unselect it in config.yaml"),
    ):
        p = sub.add_parser(action, help=help_text)
        p.add_argument(
            "--hermes-home", default=None, help="Hermes home (default: $HERMES_HOME or ~/.hermes)"
        )
        if action == "install":
            p.add_argument(
                "--python",
                default=None,
                help="interpreter Hermes runs on (default: the one of the `hermes` script)",
            )


def run(args: argparse.Namespace) -> int:
    from stratamem.contract.errors import StratamemError
    from stratamem.hermes import install as inst

    try:
        if args.hermes_action == "install":
            report = inst.install(args.hermes_home, python=args.python)
        else:
            report = inst.uninstall(args.hermes_home)
    except StratamemError as exc:
        print(json.dumps({"error": exc.to_dict()}), file=sys.stderr)
        return 1
    print(json.dumps({"action": args.hermes_action, **report.to_dict()}))
    return 0
