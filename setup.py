"""Build hook: copy the top-level data directories into the wheel as pa/_data/.

The repository layout keeps queries/, rules/, schemas/ and templates/ at the top level (fixed by the
user); an installed pa must still find them, so the wheel carries a copy under pa/_data/.
pa.paths looks in the source tree first and in pa/_data/ second.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_DIRS = ("queries", "rules", "schemas", "templates")


class BuildPyWithData(build_py):
    """build_py that also copies the data directories into the built package."""

    def run(self) -> None:
        """Build the package, then copy the data directories beside it."""
        super().run()
        root = Path(__file__).parent
        target = Path(self.build_lib) / "pa" / "_data"
        for name in DATA_DIRS:
            src = root / name
            if src.is_dir():
                shutil.copytree(src, target / name, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithData})
