from setuptools import find_packages, setup

setup(
    name="i6_rc_jobs",
    version="0.1.0",
    description="Sisyphus jobs and helpers for i6_core recipes that build RETURNN models with returnn_common",
    packages=find_packages(include=["i6_rc_jobs", "i6_rc_jobs.*"]),
    python_requires=">=3.11",
)
