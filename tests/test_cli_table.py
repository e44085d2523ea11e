"""The CLI's dispatch is one table (``app.cli.COMMANDS``): every command the parser knows has a row, each row names
functions that exist, a command runs through its row alone, and no branch per command is left in ``app.cli``."""

from __future__ import annotations

import argparse
import ast
import inspect
import sys
import types
from importlib import import_module
from pathlib import Path

import pytest

import app.cli as cli

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTED = ("train", "export", "probe", "bench", "lessons", "experiment", "inspect", "download",
              "generate", "lens", "attribute", "patch")
"""The commands docs/cli.md documents, in the order ``--help`` has always listed them."""


def test_every_command_has_one_row_in_the_parsers_order():
    assert tuple(cli.COMMANDS) == DOCUMENTED
    parser = cli._build_parser()
    assert list(parser.commands) == ["gui", *DOCUMENTED]


@pytest.mark.parametrize("command", DOCUMENTED)
def test_each_row_names_a_parser_and_a_command_function(command):
    module, add_parser, run = cli.COMMANDS[command]
    loaded = import_module(module)
    assert callable(getattr(loaded, add_parser)) and callable(getattr(loaded, run))
    assert list(inspect.signature(getattr(loaded, run)).parameters) == ["args"]


def test_a_command_runs_through_its_row(monkeypatch):
    """Replacing a row's module changes what the command runs: the dispatch reads the table, nothing else."""
    seen: list[str] = []
    fake = types.ModuleType("fake_cli")
    fake.cmd_fake = lambda args: seen.append(args.command) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_cli", fake)
    monkeypatch.setitem(cli.COMMANDS, "bench", ("fake_cli", "unused", "cmd_fake"))
    assert cli._dispatch(argparse.Namespace(command="bench", self_test=None)) == 7
    assert seen == ["bench"]


def test_no_branch_per_command_is_left():
    """No ``args.command == "<name>"`` comparison in app/cli.py: a new command is a row, not another branch."""
    tree = ast.parse((ROOT / "app" / "cli.py").read_text(encoding="utf-8"))
    branches = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Compare)
                and any(isinstance(c, ast.Constant) and c.value in DOCUMENTED for c in node.comparators)]
    assert branches == [], f"app/cli.py compares the command with a name at lines {branches}"
