"""The package list, which pyproject.toml cannot say: resources/ stays at the repository's top level and is installed
as ``app.resources`` (a package_dir mapping), so a wheel carries it inside the app and an editable install points the
same name at the folder; app/common/resources.py finds it by that name. Everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import find_packages, setup

# resources/'s folders (icons, lessons, styles) hold data only, but Python can import them as namespace packages:
# setuptools warns "Package would be ignored" for each one not listed, so they are listed (their files are package
# data, pyproject.toml's "app.resources" = ["**/*"])
_HERE = Path(__file__).resolve().parent / "resources"
RESOURCES = sorted("app.resources." + ".".join(p.relative_to(_HERE).parts) for p in _HERE.rglob("*")
                   if p.is_dir() and "__pycache__" not in p.parts)

setup(
    packages=[*find_packages(include=["app", "app.*", "attention_core", "attention_core.*"]), "app.resources",
              *RESOURCES],
    package_dir={"app.resources": "resources"},
)
