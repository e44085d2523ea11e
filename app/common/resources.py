"""Where lessons, styles and icons are: the one lookup for an installed wheel, a checkout and the PyInstaller bundle.

resources/ sits at the repository's top level; the build maps it into the package as ``app.resources`` (setup.py's
package_dir), so a wheel installs it at ``site-packages/app/resources`` and an editable install (what the bootstrap
makes of a checkout) points ``app.resources`` at the top-level folder itself. Either way ``importlib.resources``
finds it through the import system, never through a path relative to this file. A PyInstaller bundle carries it at
``<sys._MEIPASS>/resources`` (build.spec).
"""

from __future__ import annotations

import importlib.resources
import sys
from pathlib import Path

PACKAGE = "app.resources"


class ResourcesMissing(RuntimeError):
    """The app runs from files that were never installed (a bare ``PYTHONPATH``): it would open with no lessons and
    no theme, so it says how to install instead."""


def resource_root() -> Path:
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "resources"
    try:
        root = importlib.resources.files(PACKAGE)
    except ModuleNotFoundError as exc:
        raise ResourcesMissing(
            "the app's resources (lessons, styles, icons) are not installed: run scripts/bootstrap.sh, or "
            "`pip install -e .` in the checkout, or install the wheel"
        ) from exc
    # A package on disk (a wheel unpacked by pip, an editable install) is a real folder: Qt's style sheets and the
    # lesson list need file paths. Only a zipped install would not be, and pip never makes one.
    return Path(str(root))


def resource_path(*parts: str) -> Path:
    return resource_root().joinpath(*parts)


def read_style(theme: str) -> str:
    path = resource_path("styles", f"{theme}.qss")
    return path.read_text(encoding="utf-8") if path.is_file() else ""
