"""The normalized code a content hash is made of: comments, docstrings, formatting and annotations no code reads do
not count; code, and annotations dataclasses read, do."""

from __future__ import annotations

import ast
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from i6_rc_jobs._code_hash.normalize import code_digest, definition_digests

MODEL = textwrap.dedent('''
    """A model."""
    from __future__ import annotations

    import dataclasses

    import torch


    @dataclasses.dataclass
    class Config:
        """Its options."""

        dim: int
        scale: float = 1.0


    class Model(torch.nn.Module):
        """A linear map and an activation."""

        def __init__(self, cfg: Config):
            super().__init__()
            self.cfg = cfg
            self.linear = torch.nn.Linear(cfg.dim, cfg.dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            """Applies it."""
            y: torch.Tensor = self.linear(x)  # the map
            return torch.relu(y) * self.cfg.scale
    ''')


def _edit(old: str, new: str) -> str:
    assert old in MODEL
    return MODEL.replace(old, new)


def test_comments_docstrings_and_formatting_do_not_count():
    cosmetic = [
        _edit("# the map", "# the linear map, applied first"),
        _edit('"""Applies it."""', '"""Applies the map, then the activation."""'),
        _edit('    """Its options."""\n\n', ""),
        _edit(
            "return torch.relu(y) * self.cfg.scale",
            "return (\n            torch.relu(y)\n            * self.cfg.scale\n        )",
        ),
        _edit("torch.nn.Linear(cfg.dim, cfg.dim)", "torch.nn.Linear(cfg.dim, cfg.dim,)"),
        ast.unparse(ast.parse(MODEL)),  # another layout of everything, the comments gone
    ]
    for source in cosmetic:
        assert code_digest(source) == code_digest(MODEL), source


def test_annotations_no_code_reads_do_not_count():
    for old, new in [
        ("x: torch.Tensor) -> torch.Tensor:", "x):"),
        ("cfg: Config)", "cfg: Optional[Config])"),
        ("y: torch.Tensor = self.linear(x)", "y: Any = self.linear(x)"),
    ]:
        assert code_digest(_edit(old, new)) == code_digest(MODEL), new


def test_code_and_read_annotations_count():
    for old, new in [
        ("torch.relu(y)", "torch.nn.functional.gelu(y)"),
        ("scale: float = 1.0", "scale: float = 2.0"),
        ("scale: float = 1.0", "scale: ClassVar[float] = 1.0"),  # a dataclass field no more
        ("dim: int", "dim: int = 4"),
        ("from __future__ import annotations\n", ""),
        ("y: torch.Tensor = self.linear(x)", "y = self.linear(x)"),  # a local declared or not, as Python scopes it
    ]:
        assert code_digest(_edit(old, new)) != code_digest(MODEL), new


def test_definitions_name_what_changed():
    before = definition_digests(MODEL)
    after = definition_digests(_edit("torch.relu(y)", "torch.tanh(y)"))
    assert sorted(name for name in before if before[name] != after[name]) == ["Model", "Model.forward"]
    assert set(before) == {"Config", "Model", "Model.__init__", "Model.forward", "<module>"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.sampled_from(["# note", "", "#"])), max_size=12))
def test_comment_and_blank_lines_anywhere_keep_the_digest(inserts):
    """A comment or blank line inserted before any line (at that line's indent) never changes the digest."""
    lines = MODEL.splitlines()
    for position, text in sorted(inserts, reverse=True):
        index = position % (len(lines) + 1)
        following = lines[index] if index < len(lines) else ""
        in_string = sum(line.count('"""') for line in lines[:index]) % 2 == 1
        if in_string:
            continue  # inside a docstring it is the docstring's text: not a comment (and does not count either)
        indent = following[: len(following) - len(following.lstrip())]
        lines.insert(index, indent + text if text else "")
    assert code_digest("\n".join(lines)) == code_digest(MODEL)
