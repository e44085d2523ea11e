"""The package list, which pyproject.toml cannot say: resources/ stays at the repository's top level and is installed
as ``app.resources`` (a package_dir mapping), so a wheel carries it inside the app and an editable install points the
same name at the folder; app/common/resources.py finds it by that name. Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["app", "app.*", "attention_core", "attention_core.*"]), "app.resources"],
    package_dir={"app.resources": "resources"},
)
