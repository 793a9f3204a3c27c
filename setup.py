import re
from pathlib import Path

from setuptools import find_packages, setup

# The version is i6_rc_jobs.__version__, read without importing the package (setup needs none of its dependencies).
INIT = (Path(__file__).parent / "i6_rc_jobs" / "__init__.py").read_text()
VERSION = re.search(r'^__version__ = "(.+)"$', INIT, re.M)[1]

setup(
    name="i6_rc_jobs",
    version=VERSION,
    description="Sisyphus jobs and helpers for i6_core recipes that build RETURNN models with returnn_common",
    packages=find_packages(include=["i6_rc_jobs", "i6_rc_jobs.*"]),
    python_requires=">=3.11",
)
