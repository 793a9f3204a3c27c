"""What ends the report of a failure that escapes a config in the Sisyphus manager (or any script) once
:func:`install_failure_hints` was called (the setup's ``settings.py`` is the place): the line that names the fix, for a failure of an ``nn`` that ``rc_compat.apply`` was not
applied to (a Conformer built in the config fails deep inside returnn_common, a Transformer does not), and, in
Sisyphus's own ``main`` (``sis manager``, ``sis console``, ...), exit status 1 instead of Sisyphus's 0.

The call chains ``sys.excepthook`` (once): the hook that was there reports the
failure as before (Sisyphus's, IPython's, better_exchook or Python's), then this one adds its line. Nothing that
returnn_common builds changes, and no exception is touched; a failure that did not pass through such an ``nn`` gets
no line. Making the fixes apply by themselves was not chosen: fix 3 changes the net dict (and hash) of a model that
builds without it, one that takes ``nn.gating``'s halves as dims of their own (``docs/guide/versions.md``)."""

from __future__ import annotations

import sys
import types
from typing import Any, Callable

_INSTALLED = "_i6_rc_jobs_failure_hints"


def install_failure_hints() -> None:
    """Makes ``sys.excepthook`` the current hook followed by :func:`_report`; idempotent (a hook of ours is kept).
    Sisyphus sets its hook before it loads ``settings.py``: the chain keeps Sisyphus's."""
    if getattr(sys.excepthook, _INSTALLED, False):
        return
    previous = sys.excepthook

    def report(kind: type[BaseException], value: BaseException, trace: types.TracebackType | None) -> None:
        _report(previous, kind, value, trace)

    setattr(report, _INSTALLED, True)
    sys.excepthook = report


def _report(
    previous: Callable[..., Any], kind: type[BaseException], value: BaseException, trace: types.TracebackType | None
) -> None:
    """The previous hook's report, then the hint; in Sisyphus's ``main`` (which reports a failure it caught, then
    returns, and ``sis`` exits 0), exit status 1 for an ``Exception`` (a Ctrl-C stays Sisyphus's)."""
    previous(kind, value, trace)
    from i6_rc_jobs._compat import rc_compat

    hint = rc_compat.failure_hint(trace)
    if hint:
        print(hint, file=sys.stderr, flush=True)
    if issubclass(kind, Exception) and _called_by_sisyphus_main():
        raise SystemExit(1)


def _called_by_sisyphus_main() -> bool:
    """Whether the hook was called by ``sisyphus/__main__.py``'s ``main``, its handler of what escaped a command (not
    by a worker's handler of a failed task, which goes on after it, nor by Python for an uncaught exception)."""
    caller = sys._getframe(2).f_back  # 1: _report, 2: the hook, then whoever called it (None: Python itself)
    if caller is None:
        return False
    code = caller.f_code
    return code.co_name == "main" and code.co_filename.replace("\\", "/").endswith("sisyphus/__main__.py")
