"""A Sisyphus job for the tests to take an output path from, as a checkpoint input of a net dict."""

from __future__ import annotations

from sisyphus import Job


class MakeCheckpoint(Job):
    def __init__(self, name: str):
        self.name = name
        self.out = self.output_path("model.index")
