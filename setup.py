"""Only what pyproject.toml cannot say: the packages, with the teaching kernels of the repository's kernels/
folder installed as gpuviz.kernels (a top-level ``kernels`` package in site-packages would be a name any other
project may claim; gpuviz.catalog is the one module that imports them). Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(
    # namespace packages too: gpuviz/assets, lessons/builtin and export/html/vendor hold data files only
    packages=[*find_namespace_packages(include=["gpuviz", "gpuviz.*"], exclude=["*.__pycache__"]), "gpuviz.kernels"],
    package_dir={"gpuviz.kernels": "kernels"},
)
