"""Paths to files under resources/, from a source checkout and from a PyInstaller bundle (sys._MEIPASS)."""

from __future__ import annotations

import sys
from pathlib import Path


def resource_root() -> Path:
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "resources"
    return Path(__file__).resolve().parents[2] / "resources"  # app/common/resources.py -> the checkout


def resource_path(*parts: str) -> Path:
    return resource_root().joinpath(*parts)


def read_style(theme: str) -> str:
    path = resource_path("styles", f"{theme}.qss")
    return path.read_text(encoding="utf-8") if path.is_file() else ""
