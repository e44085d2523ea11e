"""Command line: the parser and the dispatch, nothing else. Each command lives with its feature (``COMMANDS``: the
command, its module, its parser, its function), imported by name when the parser is built and run only when it is
the command given. With no command, or ``gui``, the window opens. torch is imported only where used, Qt only where
an image is rendered or a window opens.

Progress goes to stderr (stdout carries the results: the JSON summary, the written path), through tqdm on a
terminal; a log file or a pipe gets a plain line every ~10 % of the run instead (``app.common.progress``).
"""

from __future__ import annotations

import argparse
import re
import sys
from importlib import import_module
from typing import Any, NoReturn

COMMANDS: dict[str, tuple[str, str, str]] = {
    # command: (its feature's CLI module, the function adding its parser, the function running it)
    "train": ("app.training.cli", "add_train_parser", "cmd_train"),
    "export": ("app.playground.cli", "add_export_parser", "cmd_export"),
    "probe": ("app.training.cli", "add_probe_parser", "cmd_probe"),
    "bench": ("app.lab.cli", "add_parser", "cmd_bench"),
    "lessons": ("app.learn.cli", "add_parser", "cmd_lessons"),
    "experiment": ("app.experiments.cli", "add_parser", "cmd_experiment"),
    "inspect": ("app.model_tab.cli", "add_inspect_parser", "cmd_inspect"),
    "download": ("app.model_tab.download_cli", "add_download_parser", "cmd_download"),
    "generate": ("app.model_tab.generate_cli", "add_generate_parser", "cmd_generate"),
    "lens": ("app.model_tab.lens_cli", "add_lens_parser", "cmd_lens"),
    "attribute": ("app.model_tab.lens_cli", "add_attribute_parser", "cmd_attribute"),
    "patch": ("app.model_tab.lens_cli", "add_patch_parser", "cmd_patch"),
}
"""Every command but ``gui``, one row each, in the order ``--help`` lists them: adding a command is its module and one
row here, no branch to add. Importing this module loads none of them; building the parser imports each (they are
light: a command's torch and Qt are imported inside its ``cmd_*``, so one command never loads another's)."""


class ReasonFirstParser(argparse.ArgumentParser):
    """argparse's parser, its refusal reordered: "attention-playground train: error: REASON" first, then the usage.
    argparse prints the usage block first, so on a terminal the reason, its last line, came after a screenful of
    options. The sub-commands' parsers are of this class too (``add_subparsers`` builds them with the parent's)."""

    commands: dict[str, argparse.ArgumentParser] = {}

    def error(self, message: str) -> NoReturn:
        unknown = re.match(r"argument command: invalid choice: '?(.*?)'? \(choose from", message)
        if unknown:  # argparse's own words ("argument command: invalid choice") name its internals, not the fix
            self.exit(2, f"{self.prog}: error: {unknown_command(unknown.group(1))}\n")
        self.exit(2, f"{self.prog}: error: {message}\n{self.format_usage()}")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """As argparse's, but an argument no parser knows is refused by the command's parser ("attention-playground
        inspect: error: unrecognized arguments: --txt 3"), not the top one's, which named no command."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            owner = self.commands.get(getattr(parsed, "command", None) or "", self)
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def unknown_command(name: str) -> str:
    """The refusal of a command that does not exist: the commands there are, and the closest one when it looks
    like a typo ("unknown command 'inpsect' (did you mean inspect?)")."""
    from difflib import get_close_matches

    names = ["gui", *COMMANDS]
    close = get_close_matches(name, names, n=1, cutoff=0.7)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (f"unknown command {name!r}{hint}; the commands are {', '.join(names)} (with none, the window opens; "
            "attention-playground COMMAND --help describes one)")


def _build_parser() -> ReasonFirstParser:
    from app.common.version import __version__

    p = ReasonFirstParser(
        prog="attention-playground",
        description="See attention work. With no command, opens the desktop app.",
    )
    # not argparse's "version" action: that prints and exits 0 at once, whatever follows ("--version extra")
    p.add_argument("--version", action="store_true", help=f"print the version ({__version__}) and exit")
    p.add_argument("--self-test", metavar="DIR", nargs="?", const="", default=None,
                   help="open the window, render every view to PNG (into DIR or a temp folder) and exit 0; its own "
                        "settings, never the user's")
    sub = p.add_subparsers(dest="command")

    sub.add_parser("gui", help="open the desktop app (the default)")
    for module, add_parser, _ in COMMANDS.values():  # in the table's order: the order ``--help`` lists them
        getattr(import_module(module), add_parser)(sub)
    p.commands = dict(sub.choices)
    return p


def run_gui(self_test_dir: str | None = None) -> int:
    from app.shell.gui import run

    return run(self_test_dir)


def main(argv: list[str]) -> int:
    """Parse ``argv`` and run its command; the exit code (2: bad input, said in one line naming the option)."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.version:
        if args.command is not None or args.self_test is not None:
            parser.error("--version takes no other arguments")
        from app.common.version import __version__

        print(f"attention-playground {__version__}")
        return 0
    if args.self_test is not None and args.command not in (None, "gui"):  # the window alone, or the command?
        parser.error(f"--self-test opens the window; it takes no command (got {args.command})")
    from app.common.validation import Refused

    try:
        return _dispatch(args)
    except Refused as exc:  # a check deep in a command: the same one line as the command's own refusals
        name = f" {args.command}" if args.command not in (None, "gui") else ""
        print(f"attention-playground{name}: {exc}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.self_test is not None:
        if args.self_test:
            from app.common.outputs import check_output_folder

            check_output_folder(args.self_test, "--self-test")
        return run_gui(args.self_test)
    if args.command in (None, "gui"):
        return run_gui(None)
    if args.command not in COMMANDS:
        return 2
    module, _, run = COMMANDS[args.command]
    result: int = getattr(import_module(module), run)(args)
    return result
