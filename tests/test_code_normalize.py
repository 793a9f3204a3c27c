"""The normalized code a content hash is made of: comments, docstrings, formatting and annotations no code reads do
not count; code, and annotations dataclasses read, do."""

from __future__ import annotations

import ast
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from i6_rc_jobs._code_hash.fingerprint import CodeFingerprint
from i6_rc_jobs._code_hash.normalize import code_digest, definition_digests, module_code
from i6_rc_jobs._code_hash.reachable import setup_roots

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


def _same(a: str, b: str) -> bool:
    return code_digest(a) == code_digest(b)


IMPORTS = [
    "import os",
    "import sys",
    "import torch",
    "from torch import nn",
    "import numpy as np",
    "from a import b, c",
]


@settings(max_examples=40, deadline=None)
@given(st.permutations(IMPORTS))
def test_the_order_of_a_run_of_imports_does_not_count(order):
    """isort's reordering (and its splitting or joining of ``from a import b, c``) keeps the digest."""
    tail = "\n\nx = os.sep + sys.platform + b + c\n"
    split = [line for line in order if line != "from a import b, c"] + ["from a import c", "from a import b"]
    assert code_digest("\n".join(order) + tail) == code_digest("\n".join(IMPORTS) + tail)
    assert code_digest("\n".join(split) + tail) == code_digest("\n".join(IMPORTS) + tail)


def test_an_import_order_that_decides_a_name_counts():
    assert not _same("from a import x\nfrom b import x\n", "from b import x\nfrom a import x\n")
    assert not _same("import a\nx = 1\nimport b\n", "import b\nx = 1\nimport a\n")  # not one run


def test_imports_only_removed_annotations_read_do_not_count():
    plain = textwrap.dedent("""
        import torch

        def forward(x, mask=None):
            return torch.relu(x)
        """)
    hinted = textwrap.dedent("""
        from typing import Optional
        import typing as t
        import torch

        def forward(x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> t.Any:
            return torch.relu(x)
        """)
    assert _same(plain, hinted)
    read_at_run_time = hinted.replace("return torch.relu(x)", "return typing_cast(x)").replace(
        "import typing as t", "from typing import cast as typing_cast"
    )
    assert not _same(plain.replace("return torch.relu(x)", "return x"), read_at_run_time.replace("import torch", ""))
    for near_miss in [
        plain.replace("import torch", "import torch\nimport torchaudio"),  # imports run code: it counts
        plain.replace("import torch", "import torch\nfrom mytypes import Optional"),  # not typing's
        plain.replace("import torch", "import torch\nfrom typing import Optional\nx: Optional[int] = None"),
    ]:
        assert not _same(plain, near_miss), near_miss


def test_an_import_a_kept_annotation_reads_counts():
    """A dataclass reads its fields' annotations: the import of a name in one counts."""
    field = textwrap.dedent("""
        import dataclasses
        from typing import ClassVar

        @dataclasses.dataclass
        class Config:
            dim: int = 1
        """)
    class_var = field.replace("dim: int = 1", "dim: ClassVar[int] = 1")
    assert not _same(field, class_var)
    assert not _same(class_var, class_var.replace("from typing import ClassVar\n", ""))
    assert _same(field, field.replace("from typing import ClassVar\n", "from typing import Any, ClassVar\n"))


def test_type_checking_blocks_do_not_count():
    plain = textwrap.dedent("""
        import torch

        def forward(x):
            return torch.relu(x)
        """)
    for guarded in [
        textwrap.dedent("""
        from typing import TYPE_CHECKING
        import torch

        if TYPE_CHECKING:
            from my_models.config import Config

        def forward(x: "Config"):
            return torch.relu(x)
        """),
        textwrap.dedent("""
        import typing
        import torch

        if typing.TYPE_CHECKING:
            import returnn.frontend as rf
        else:
            pass

        def forward(x: rf.Tensor):
            return torch.relu(x)
        """),
    ]:
        assert _same(plain, guarded), guarded
    read = textwrap.dedent("""
        from typing import TYPE_CHECKING
        import torch

        if TYPE_CHECKING:
            from my_models.config import scale

        def forward(x):
            return torch.relu(x) * scale
        """)
    assert not _same(read, read.replace("from my_models.config import scale", "from my_models.other import scale"))
    not_typing = read.replace("from typing import TYPE_CHECKING", "TYPE_CHECKING = True").replace(" * scale", "")
    assert not _same(plain, not_typing)


def test_pyupgrade_rewrites_do_not_count():
    model = textwrap.dedent("""
        import torch

        class Model(torch.nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.name = "x"
        """)
    for old, new in [
        ("super().__init__()", "super(Model, self).__init__()"),
        ('self.name = "x"', "self.name = u'x'"),
    ]:
        assert _same(model, model.replace(old, new)), new
    assert _same("class Base:\n    pass\n", "class Base(object):\n    pass\n")
    for call, before in [
        ("super(Other, self).__init__()", ""),  # another class's parent
        ("super(Model, dim).__init__()", ""),  # not the method's first parameter
        ("[super(Model, self).__init__() for _ in [0]]", ""),  # a comprehension: super() fails there
        ("super(Model, self).__init__()", "@decorated\n"),  # the name may be bound to another class
        ("super(Model, self).__init__()", "super = print\n"),
    ]:
        explicit = model.replace("super().__init__()", call).replace("class Model", before + "class Model")
        zero = explicit.replace(call.partition(".")[0].lstrip("["), "super()")
        assert not _same(zero, explicit), (call, before)
    nested = model.replace("super().__init__()", "def inner():\n            return super(Model, self).__init__()")
    assert not _same(nested, nested.replace("super(Model, self)", "super()"))  # no super() in a nested function
    assert not _same(
        "try:\n    import b\n    import a\nexcept ImportError:\n    pass\n",
        "try:\n    import a\n    import b\nexcept ImportError:\n    pass\n",
    )
    assert not _same("class A(object):\n    pass\n", "object = dict\nclass A(object):\n    pass\n")


def test_equal_spellings_of_kept_annotations_do_not_count():
    config = textwrap.dedent("""
        import dataclasses
        import typing
        from typing import Dict, List, Optional, Tuple, Union

        @dataclasses.dataclass
        class Config:
            dims: {}
        """)
    spellings = [
        ["Optional[int]", "int | None", "Union[int, None]", "typing.Optional[int]"],
        ["Union[int, str]", "int | str", "typing.Union[int, str]"],
        ["List[Optional[int]]", "list[int | None]", "typing.List[Union[int, None]]"],
        ["Dict[str, Tuple[int, ...]]", "dict[str, tuple[int, ...]]"],
    ]
    for alike in spellings:
        for spelling in alike[1:]:
            assert _same(config.format(alike[0]), config.format(spelling)), spelling
    for one, other in [
        ("Optional[int]", "int"),
        ("Optional[int]", "Union[None, int]"),  # its arguments in another order
        ("Union[int, str]", "str | int"),
        ('Optional["Config"]', '"Config" | None'),  # the second fails where it is evaluated
        ("List[int]", "List[str]"),
        ("List[int]", "tuple[int]"),
    ]:
        assert not _same(config.format(one), config.format(other)), other
    not_typing = config.replace("from typing import", "from mytypes import")
    assert not _same(not_typing.format("Optional[int]"), not_typing.format("int | None"))
    assert not _same(not_typing.format("List[int]"), not_typing.format("list[int]"))


STEPS = textwrap.dedent("""
    import torch

    SCALE = 2.0


    def helper(x):
        return x * SCALE


    def search_helper(x):
        return x.argmax(-1)


    class Model(torch.nn.Module):
        def __init__(self, dim: int = 8):
            super().__init__()
            self.linear = torch.nn.Linear(dim, dim)

        def forward(self, x):
            return helper(self.linear(x))


    def search_step(*, model, data, **_kwargs):
        return search_helper(model(data))
    """)


def _counted(source: str, roots=("Model",)) -> tuple[str, object]:
    code = module_code(source, roots=roots)
    return code.digest, code.counted


def test_only_what_the_reference_reaches_counts():
    digest, counted = _counted(STEPS)
    assert counted == ["Model", "helper"]
    assert module_code(STEPS, roots=("search_step",)).counted == ["search_helper", "search_step"]
    for unreached in [
        STEPS.replace("return search_helper(model(data))", "return search_helper(model(data)) + 1"),
        STEPS.replace("x.argmax(-1)", "x.argmax(1)"),
        STEPS.replace("def search_step(*, model, data", "def search_step(*, model, data, beam=12"),
        STEPS + "\n\ndef another_step():\n    return 1\n",
    ]:
        assert _counted(unreached)[0] == digest
    assert _counted(STEPS.replace("x * SCALE", "x * SCALE * 2"))[0] != digest
    assert _counted(STEPS.replace("SCALE = 2.0", "SCALE = 3.0"))[0] != digest  # top-level statements all count
    assert module_code(STEPS).counted is None and module_code(STEPS).digest == code_digest(STEPS)


def test_what_runs_when_a_definition_is_made_counts():
    """A decorator, a default, a base class, a class body run where the module is imported: what they name counts,
    and so does a definition whose making may run code."""
    digest, _ = _counted(STEPS)
    for old, new, now_counted in [
        ("def search_step", "@register\ndef search_step", "search_step"),  # the decorator may keep it
        ("def search_step(*, model, data", "def search_step(*, model, data, f=make()", "search_step"),
        ("class Model(torch.nn.Module)", "class Model(Base)", "Base"),
        ("def __init__(self, dim: int = 8)", "def __init__(self, dim: int = DIM())", "DIM"),
        ("    def forward", "    table = table_of()\n\n    def forward", "table_of"),
        ("def helper", "def search_step(): pass\n\n\ndef helper", "search_step"),  # bound twice
        ("SCALE = 2.0", "SCALE = 2.0\nsearch_step = None", "search_step"),
        ("def search_step", "class Layer(Registered):\n    pass\n\n\ndef search_step", "Layer"),
    ]:
        source = STEPS.replace(old, new)
        for name in ("Base", "DIM", "table_of", "Registered"):
            if name in new:
                source += f"\n\ndef {name}():\n    return 1\n"
        edited, counted = _counted(source)
        assert now_counted in counted and edited != digest, new
    base = (
        STEPS.replace("class Model(torch.nn.Module)", "class Model(Base)")
        + "\n\nclass Base(torch.nn.Module):\n    pass\n"
    )
    assert "Base" in _counted(base)[1]
    assert _counted(base.replace("    pass\n", "    def hook(self):\n        return 1\n"))[0] != _counted(base)[0]


def test_a_name_in_a_string_counts_and_computed_lookups_count_the_whole_module():
    by_string = STEPS.replace("return helper(self.linear(x))", 'return getattr(self, "search_step")(x)')
    assert "search_step" in _counted(by_string)[1]
    for dynamic in [
        "globals()['search_' + 'step']",
        "vars()",
        "eval('search_step')",
        "sys.modules[__name__]",
        "importlib.import_module(__name__)",
    ]:
        source = STEPS.replace("return helper(self.linear(x))", f"return {dynamic}")
        source = "import importlib\nimport sys\n" + source
        assert _counted(source)[1] is None, dynamic
        assert _counted(source)[0] != _counted(source.replace("x.argmax(-1)", "x.argmax(1)"))[0], dynamic
    for whole in ["__all__ = ['Model']\n", "def __getattr__(name):\n    return None\n"]:
        assert _counted(STEPS + whole)[1] is None, whole


def test_other_modules_imports_are_roots():
    sources = {
        "pkg": b"",
        "pkg.model": STEPS.encode(),
        "pkg.config": b"from .model import helper\nfrom pkg import model as m\n\ndef f():\n    return m.search_helper\n",
        "pkg.star": b"",
    }
    roots = setup_roots(sources, {"pkg"}, "pkg.model", "Model.forward")
    assert roots["pkg.model"] == {"Model", "helper", "search_helper"}
    assert roots["pkg"] == {"model"}
    namespace = {**sources, "pkg.config": b"import pkg.model\n\nx = pkg.model.__dict__['search_step']\n"}
    assert setup_roots(namespace, {"pkg"}, "pkg.model", "Model")["pkg.model"] is None
    passed_on = {**sources, "pkg.config": b"import pkg.model\n\ndef f():\n    return getattr(pkg.model, 'x')\n"}
    assert setup_roots(passed_on, {"pkg"}, "pkg.model", "Model")["pkg.model"] is None
    star = {**sources, "pkg.star": b"from pkg.model import *\n"}
    assert setup_roots(star, {"pkg"}, "pkg.model", "Model")["pkg.model"] is None
    computed = {**sources, "pkg.star": b"import importlib\n"}
    assert set(setup_roots(computed, {"pkg"}, "pkg.model", "Model").values()) == {None}


def test_changes_name_what_now_counts():
    def fingerprint(source: str) -> CodeFingerprint:
        code = module_code(source, "m.py", roots=("Model",))
        entry = {"file": "m.py", "digest": code.digest, "defs": code.definitions, "counted": code.counted}
        return CodeFingerprint("m.Model", True, {"m": entry}, {})

    before = fingerprint(STEPS)
    reaching = STEPS.replace("return helper(self.linear(x))", "return search_helper(helper(self.linear(x)))")
    assert list(before.changes(fingerprint(reaching))) == [
        "module m (m.py): Model.forward changed; now counted: search_helper"
    ]
    assert list(before.changes(fingerprint(STEPS.replace("x.argmax(-1)", "x.argmax(1)")))) == []
