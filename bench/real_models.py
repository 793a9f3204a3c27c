"""Ours against returnn_common's own serialization on real researchers' models (tests/real_models, loaded from the
pinned i6_experiments checkout): does the written config load in RETURNN and construct every stage? Run from the
repository root:

    .venv/bin/python -m bench.real_models

Ours: one config per model (``get_network`` of its epoch stages) and one per other stage (recognition, alignment),
written by ``ReturnnCommonSerializer``. returnn_common's own: the way i6 setups write returnn_common's raw dicts
(``ReturnnDimTagsProxy`` and ``CodeWrapper``, ``bench.methods.serialize_dim_tags_like_i6``), one config per stage
(the proxy writes one ``network``). Each stage is constructed as RETURNN's engine does for training, a recognition
stage with the search flag. Prints a markdown table: model, kind, source path, and per method ``y`` or ``n`` with
the first error in one line."""

from __future__ import annotations

import os

# Before anything imports TensorFlow/RETURNN: no GPU, no TF log flood.
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import contextlib  # noqa: E402
import io  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402
from typing import Callable, Optional  # noqa: E402

from i6_core.returnn.config import ReturnnConfig  # noqa: E402

from bench.methods import serialize_dim_tags_like_i6  # noqa: E402
from i6_rc_jobs.jobs.config_file import write_config_file  # noqa: E402
from tests import real_models  # noqa: E402


def _one_line(error: BaseException) -> str:
    """The error in one line, at most 160 characters, without the temporary directory of the config."""
    text = re.sub(r"\S*/returnn\.config", "returnn.config", " ".join(f"{type(error).__name__}: {error}".split()))
    return text if len(text) <= 160 else text[:157] + "..."


def _first_error(checks: list[Callable[[], None]]) -> Optional[str]:
    """The first of ``checks`` that raises, in one line; None if none does."""
    for check in checks:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                check()
        except Exception as error:  # noqa: BLE001 (any failure is the result)
            return _one_line(error)
    return None


def _constructs(config: ReturnnConfig, stage: real_models.Stage, search: bool, write: Callable) -> Callable[[], None]:
    """A check: ``config`` written by ``write`` (config, path) constructs ``stage``."""

    def check() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "returnn.config")
            write(config, path)
            real_models.construct(path, stage, search)

    return check


def _ours(name: str, stages: real_models.Stages) -> list[Callable[[], None]]:
    module = real_models.module(name)

    def check(stage: real_models.Stage) -> None:
        serializer = real_models.serializers(stages)[real_models.serializer_key(stage)]
        config = real_models.returnn_config([serializer])
        _constructs(config, stage, stage in module.SEARCH_STAGES, write_config_file)()

    return [lambda stage=stage: check(stage) for stage in stages]


def _returnn_common_s_own(name: str, stages: real_models.Stages) -> list[Callable[[], None]]:
    module = real_models.module(name)

    def check(stage: real_models.Stage) -> None:
        extern_data, network = stages[stage]
        config = real_models.returnn_config([], extern_data=extern_data, network=network)
        serialize_dim_tags_like_i6(config)
        _constructs(config, stage, stage in module.SEARCH_STAGES, lambda c, path: c.write(path))()

    return [lambda stage=stage: check(stage) for stage in stages]


def main() -> None:
    print("| model | kind | source (i6_experiments) | ours holds | returnn_common's own holds |")
    print("|---|---|---|---|---|")
    for name in real_models.NAMES:
        module = real_models.module(name)
        with contextlib.redirect_stdout(io.StringIO()):
            stages = module.build()
        cells = []
        for method in (_ours, _returnn_common_s_own):
            error = _first_error(method(name, stages))
            cells.append("y" if error is None else f"n: `{error}`")
        print(f"| {name} | {module.KIND} | `{module.SOURCE}` | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
