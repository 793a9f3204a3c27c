"""
pytest plugin that runs returnn_common's own tests (``tests/test_*.py`` of the pinned checkout, unmodified) with
what we change, injected here and nowhere else (``python -m pytest -p tests.rc_peer.plugin FILE``, see ``run.py``):

- returnn_common made compatible with today's RETURNN by :func:`i6_rc_jobs._compat.rc_compat.apply`;
- the one-line fix of its ``tests/returnn_helpers.py``: ``config_net_dict_via_serialized`` pops names
  (``FeatureDim``, ``SpatialDim``) that returnn_common's serializer stopped writing in 54bb95d; here it pops them
  if there (``scope.pop(name, None)``), applied to the helper's own source, so a changed helper fails loudly;
- with ``--rc-serializer=ours`` (the default): the config code its tests serialize (``get_complete_py_code_str``)
  written by our ``ReturnnCommonSerializer`` from the raw dicts instead. Every config code that reaches the helper
  must then start with one ours wrote (tests append settings), else that test fails: the swap cannot silently stop
  applying. Each such net is graph-hashed too (``hash_scheme="graph"``), which must not fail; and where a test runs
  a net in RETURNN (``dummy_run_net``), the graph's parameter scopes must be RETURNN's TF variables: each variable
  layer's scope and param_name is a variable, and every variable lies in the scope of a layer that may own it.

``--rc-peer-report=PATH`` writes a JSON report: per test its outcome, the first line of its failure and how many
configs our serializer wrote for it; rewritten as each test starts and ends, so that a test which kills the process
(TF aborts in C++) stays in it as ``crashed``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import textwrap
import types
from typing import Any, Callable

import pytest

from i6_rc_jobs import ReturnnCommonSerializer, rc_compat

HELPER_FIX = ("scope.pop(tmp)", "scope.pop(tmp, None)")
NOT_OURS = "config code not written by i6_rc_jobs's ReturnnCommonSerializer: the serializer swap is not active"


class _State:
    """What this process records: the configs our serializer wrote, per test and in all."""

    def __init__(self, mode: str, report_path: str | None):
        self.mode = mode
        self.report_path = report_path
        self.ours_codes: set[str] = set()
        self.written_for_test = 0
        self.scope_checks = 0
        self.results: dict[str, dict[str, Any]] = {}


_state: _State | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rc_peer", "returnn_common's own tests as our peer test")
    group.addoption("--rc-serializer", choices=("ours", "theirs"), default="ours", help="which serializer writes")
    group.addoption("--rc-peer-report", default=None, help="write a JSON report to this path")


def pytest_configure(config: pytest.Config) -> None:
    global _state
    _state = _State(config.getoption("--rc-serializer"), config.getoption("--rc-peer-report"))
    nn = rc_compat.apply(importlib.import_module("returnn_common.nn"))
    helpers = importlib.import_module("returnn_common.tests.returnn_helpers")
    helpers.config_net_dict_via_serialized = _checked(_with_fix(helpers.config_net_dict_via_serialized, *HELPER_FIX))
    helpers.dummy_run_net = _scopes_checked(helpers.dummy_run_net)
    if _state.mode == "ours":
        nn.naming.ReturnnConfigSerializer.get_complete_py_code_str = _our_complete_py_code_str


def _with_fix(func: types.FunctionType, old: str, new: str) -> types.FunctionType:
    """``func`` compiled anew from its own source with ``old`` replaced by ``new`` (exactly once), in its module, with
    its file name and line numbers (tracebacks show the original lines)."""
    source = textwrap.dedent(inspect.getsource(func))
    if source.count(old) != 1:
        raise RuntimeError(f"{func.__module__}.{func.__qualname__}: expected {old!r} once, the helper changed")
    tree = ast.parse(source.replace(old, new))
    ast.increment_lineno(tree, func.__code__.co_firstlineno - 1)
    namespace: dict[str, Any] = {}
    exec(compile(tree, inspect.getsourcefile(func), "exec"), func.__globals__, namespace)
    return namespace[func.__name__]


def _checked(config_net_dict_via_serialized: Callable[[str], Any]) -> Callable[[str], Any]:
    """The helper, refusing (with ours) config code that ours did not write."""

    def checked(config_code: str) -> Any:
        if _state.mode == "ours" and not any(config_code.startswith(code) for code in _state.ours_codes):
            raise AssertionError(NOT_OURS)
        return config_net_dict_via_serialized(config_code)

    return checked


def _scopes_checked(dummy_run_net: Callable[..., Any]) -> Callable[..., Any]:
    """``dummy_run_net``, then the graph hash's parameter scopes (rule "parameter-scope") checked against the TF
    variables of the network RETURNN built."""

    def checked(config: dict[str, Any], **kwargs: Any) -> Any:
        engine = dummy_run_net(config, **kwargs)
        if _state.mode == "ours":
            _check_scopes(config["network"], [v.name[: -len(":0")] for v in engine.network.get_params_list()])
        return engine

    return checked


def _check_scopes(network: dict[str, Any], variables: list[str]) -> None:
    from i6_rc_jobs._hashing.graph import Graph

    net = ReturnnCommonSerializer(network=network)
    nodes = Graph(dict(net.sections())["network"], "network").form["layers"]
    named = {node["@scope"] + node["param_name"] for node in nodes if node["class"] == "variable"}
    scopes = [node["@scope"] for node in nodes if "@scope" in node]
    missing = named - set(variables)
    outside = [v for v in variables if not any(v.startswith(scope) for scope in scopes)]
    assert not missing and not outside, f"graph scopes {sorted(missing)} not TF variables; {outside} in no scope"
    _state.scope_checks += 1


def _our_complete_py_code_str(self: Any, root_module: Any) -> str:
    """In place of ``ReturnnConfigSerializer.get_complete_py_code_str``: the same config (RETURNN settings,
    extern_data, network) from the same raw dicts, written by ``ReturnnCommonSerializer``."""
    extern_data, network = self.get_extern_data_raw_dict(), self.get_net_dict_raw_dict(root_module=root_module)
    serializer = ReturnnCommonSerializer(extern_data=extern_data, network=network)
    ReturnnCommonSerializer(extern_data=extern_data, network=network, hash_scheme="graph")._sis_hash()
    code = f"use_tensorflow = True\nbehavior_version = {self._behavior_version}\n\n{serializer.get()}"
    _state.ours_codes.add(code)
    _state.written_for_test += 1
    return code


def pytest_runtest_logstart(nodeid: str) -> None:
    _state.written_for_test = _state.scope_checks = 0
    _state.results[nodeid] = {"outcome": "crashed", "message": "the test process died in this test"}
    _write_report()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """The first failure or skip decides the outcome; a test that reaches its teardown without either passed."""
    result = _state.results[report.nodeid]
    if result["outcome"] == "crashed":
        if report.failed:
            result.update(outcome="failed" if report.when == "call" else "error", message=_first_line(report))
        elif report.skipped:
            result.update(outcome="skipped", message=_first_line(report))
        elif report.when == "teardown":
            result.update(outcome="passed", message="")
    if report.when == "teardown":
        result["ours_serializations"] = _state.written_for_test
        result["scope_checks"] = _state.scope_checks
        _write_report()


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _state.results[report.nodeid] = {"outcome": "error", "message": _first_line(report)}
        _write_report()


def _first_line(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The first line of the failure: the exception and its message, e.g. ``KeyError: 'FeatureDim'``."""
    if isinstance(report.longrepr, tuple):  # a skip: (path, line number, reason)
        return report.longrepr[2]
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr).strip().splitlines()[-1]
    return (text.strip().splitlines() or [""])[0]


def _write_report() -> None:
    if _state.report_path:
        with open(_state.report_path, "w") as file:
            json.dump({"mode": _state.mode, "tests": _state.results}, file, indent=1, sort_keys=True)
