"""Lets the pinned returnn_common (f7ad63a), and its versions back to 2022-04, build their models with the pinned
RETURNN (b46ff5f0f) and newer ones.

Call :func:`apply` once with the returnn_common ``nn`` package, before building::

    from returnn_common import nn
    from i6_rc_jobs import rc_compat

    nn = rc_compat.apply(nn)  # the installed returnn_common, or a versioned import of it

Nothing is patched on import (why the fixes are not made by themselves: ``docs/guide/versions.md``); a failure
inside an ``nn`` that needs them ends in the line naming the call (:func:`failure_hint`). Fix 1 is made only with a RETURNN that needs it; fix 2 changes nothing where
``LayerState`` worked before; fix 4 is made only in versions that read ``Dim.generic``. Fixes 1, 2 and 4 change how
returnn_common builds, not the net dicts it builds. Fix 3 changes the dims ``nn.gating`` splits into (the same size,
derived by dividing on the left): for the ``2 * model`` of the Conformer that is ``model`` again, the net dict
returnn_common built with the RETURNN of its time.

1. ``nn.Loop`` and ``nn.Cond``: RETURNN 059fc8a6b (2023-08-18, "ControlFlowContext identifier, cond-true,
   cond-false") made ``identifier`` a required argument of ``ControlFlowContext`` and split ``Types.Cond`` into
   ``CondTrue``/``CondFalse``. returnn_common still calls ``nn.ControlFlowContext(kind=..., outer_ctx=...)`` with
   ``Types.Cond`` (``TypeError: ... missing 1 required keyword-only argument: 'identifier'``). ``nn.ControlFlowContext``
   becomes a factory of RETURNN's real class which supplies the identifier RETURNN's own front end gives
   (``returnn/tf/frontend_layers/loop.py``, ``cond.py``: the name of the enclosing layer for a loop, of the cond
   layer for both branches of a cond), and ``nn.Cond`` marks its false branch ``CondFalse``.
2. ``nn.LayerState`` under dm-tree 0.1.10: dm-tree rebuilds a dict subclass as ``type(d)(<generator of (key, value)>)``;
   ``LayerState`` takes a single non-dict argument as the value of a key ``state``, so every ``tree.map_structure``
   over a loop state turned ``LayerState(decoder=..., att=...)`` into ``LayerState(state=<generator>)`` and
   ``nn.Loop`` failed (``assert isinstance(name_ctx, nn.NameCtx)``). ``LayerState`` now reads a generator as items.
3. ``nn.gating`` (the GLU of ``nn.ConformerConvBlock``): it splits its ``2 * model`` input into two halves of
   ``axis // 2``, and the Conformer takes the result as ``model`` (its depthwise conv has ``in_dim=model``). RETURNN
   91d31d240 (2023-04-26, "Dim math simplify, merge divs", #1317) made ``(b * a) // b != a`` on purpose, so the
   halves are ``2*model//2``, a dim of its own, and every Conformer failed
   (``get_axis_from_description(Dim{F'model'(64)}) not found``). ``2 * a`` divided by 2 on its left is still ``a``;
   RETURNN's own ``rf.gating`` (c1550d2b2, 2023-04-18) splits into ``axis.div_left(2)``, and now so does ``nn.gating``:
   the net dict is again the one returnn_common built before that RETURNN change. A GLU over ``model * 2`` (the
   factor on the right, as in some researchers' LConv blocks) is split into ``axis // 2``, which is still ``model``.
   Before 3834ae4 (2022-06-12), returnn_common wrapped ``gating`` in ``nn.scoped`` (a subnetwork per call); the new
   one is wrapped alike.
4. ``nn.get_dim_deps`` (used by ``nn.constant``, ``nn.zeros``, ``nn.random``, ...) from c293121 (2022-08-23) until
   2b06200 (2023-02-25) checks ``dim.generic or dim.special``; RETURNN dd4b0fd7e (2023-02-24, "Tensor abstraction")
   removed ``Dim.generic`` with the generic dims it marked, so every such call failed (``AttributeError: 'Dim' object
   has no attribute 'generic'``). The function is rebuilt from its own code reading ``special`` there, which is what
   2b06200 made of that line (``if dim.special:``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import sys
import traceback
import types
from typing import Any, Optional

from i6_rc_jobs._util.loaded_modules import module_file

__all__ = ["apply", "missing", "not_applied", "failure_hint"]

_APPLIED = "_i6_rc_jobs_rc_compat_applied"


def apply(nn: types.ModuleType) -> types.ModuleType:
    """Makes returnn_common's ``nn`` package (the one given: the installed one or a versioned import) work with the
    installed RETURNN and dm-tree; idempotent. Returns the real package (``from returnn_common import nn`` gives a
    lazy proxy, which loads it)."""
    nn = importlib.import_module(nn.__name__)  # loads the package behind returnn_common's lazy proxy
    if getattr(nn, _APPLIED, False):
        return nn
    _fix_control_flow_context(nn)
    _fix_layer_state(nn)
    _fix_gating(nn)
    _fix_dim_generic(nn)
    setattr(nn, _APPLIED, True)
    return nn


def missing(nn: types.ModuleType) -> list[str]:
    """What :func:`apply` would fix in ``nn`` with the installed RETURNN, if it was not applied yet: nothing for an
    applied one. A model may build without the fixes (a Transformer) and another one not (a Conformer), so a
    serializer made from a model of such an ``nn`` refuses it (see ``from_returnn_common``)."""
    nn = importlib.import_module(nn.__name__)
    if getattr(nn, _APPLIED, False):
        return []
    found = []
    if _needs_identifier(nn.ControlFlowContext):
        found.append("nn.Loop and nn.Cond (RETURNN's ControlFlowContext needs an identifier)")
    if _halves_are_new_dims():
        found.append("nn.gating, the Conformer's GLU (RETURNN makes 2*model//2 a dim of its own)")
    if _reads_dim_generic(nn):
        found.append("nn.get_dim_deps (RETURNN removed Dim.generic)")
    return found


def not_applied(nn: types.ModuleType) -> Optional[str]:
    """The one line that says what :func:`apply` would fix in ``nn`` and how to call it, or None if nothing: for
    every place that meets an ``nn`` it was not applied to (a serializer made from its model, a failed build)."""
    needs = missing(nn)
    if not needs:
        return None
    return (
        f"{nn.__name__} was not made to build with this RETURNN ({'; '.join(needs)}): call "
        "nn = rc_compat.apply(nn) (from i6_rc_jobs import rc_compat) before building the model"
    )


def failure_hint(trace: Optional[types.TracebackType]) -> Optional[str]:
    """``hint: <the line of not_applied>`` for every returnn_common ``nn`` package that a failure's traceback passed
    through and that needs :func:`apply` (a Conformer of such an ``nn`` fails deep inside it, with a
    ReturnnConstructTemplateException about ``2*model//2``), or None: what ends the report of such a failure, in a
    build (:mod:`i6_rc_jobs._builds.server`) and in the manager (:mod:`i6_rc_jobs._compat.failure_hints`)."""
    files = {os.path.abspath(frame.filename) for frame in traceback.extract_tb(trace)}
    hints = []
    for name, module in sorted(sys.modules.items()):
        if name.rsplit(".", 1)[-1] != "nn" or "returnn_common" not in name or not (file := module_file(module)):
            continue
        package = os.path.dirname(os.path.abspath(file)) + os.sep
        said = not_applied(module) if any(f.startswith(package) for f in files) else None
        if said:
            hints.append(f"hint: {said}")
    return "\n".join(hints) or None


def _needs_identifier(control_flow_context: Any) -> bool:
    """RETURNN 059fc8a6b and later: its ``ControlFlowContext`` needs an identifier (fix 1)."""
    return "identifier" in inspect.signature(control_flow_context.__init__).parameters


def _halves_are_new_dims() -> bool:
    """RETURNN 91d31d240 and later: ``(2 * a) // 2`` is not ``a`` (fix 3)."""
    from returnn.tensor import Dim

    model = Dim(2, description="model")
    return (2 * model) // 2 != model


def _reads_dim_generic(nn: types.ModuleType) -> bool:
    """returnn_common c293121 to 2b06200: ``nn.get_dim_deps`` reads ``Dim.generic``, which RETURNN dd4b0fd7e removed
    (fix 4)."""
    original = getattr(nn.base, "get_dim_deps", None)  # since c293121 (2022-08-23)
    return original is not None and "generic" in original.__code__.co_names


def _fix_control_flow_context(nn: types.ModuleType) -> None:
    """Fix 1 (see the module): only with a RETURNN whose ``ControlFlowContext`` needs an identifier."""
    real: Any = nn.ControlFlowContext
    if not _needs_identifier(real):
        return  # RETURNN before 059fc8a6b: returnn_common's calls fit

    class Types(real.Types):
        """RETURNN's kinds, plus the ``Cond`` that returnn_common uses for both branches (made CondFalse below)."""

        Cond = real.Types.CondTrue

    def control_flow_context(*, kind: str, outer_ctx: Any = None, identifier: Optional[str] = None) -> Any:
        """RETURNN's ControlFlowContext; the identifier by default that of the current name context, as RETURNN's
        own ``Loop`` gives it (``Cond`` sets its own, below)."""
        if identifier is None:
            identifier = nn.NameCtx.current_ctx().get_abs_name()
        return real(kind=kind, outer_ctx=outer_ctx, identifier=identifier)

    # mypy knows no attributes set on a function, nor (typeshed's ModuleType) on a module: both work at runtime
    control_flow_context.Types = Types  # type: ignore[attr-defined]
    nn.ControlFlowContext = control_flow_context  # type: ignore[attr-defined]

    cond_init = nn.Cond.__init__

    @functools.wraps(cond_init)
    def init_cond(self: Any, *args: Any, **kwargs: Any) -> None:
        cond_init(self, *args, **kwargs)
        identifier = self.name_ctx.get_abs_name()
        self.true_branch_control_flow_ctx.identifier = identifier
        self.false_branch_control_flow_ctx.identifier = identifier
        self.false_branch_control_flow_ctx.kind = real.Types.CondFalse

    nn.Cond.__init__ = init_cond


def _fix_layer_state(nn: types.ModuleType) -> None:
    """Fix 2 (see the module)."""
    layer_state_init = nn.LayerState.__init__

    @functools.wraps(layer_state_init)
    def init_layer_state(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) == 1 and not kwargs and isinstance(args[0], types.GeneratorType):
            args = (dict(args[0]),)
        layer_state_init(self, *args, **kwargs)

    nn.LayerState.__init__ = init_layer_state


def _half(axis: Any) -> Any:
    """The halves of ``axis`` that returnn_common's ``axis // 2`` gave with the RETURNN of its time, which made both
    ``2 * a`` and ``a * 2`` divided by 2 ``a``: today ``a * 2`` divided on the right is ``a``, ``2 * a`` divided on the
    left (fix 3); any other dim is divided on the left, as RETURNN's ``rf.gating`` does."""
    op = axis.derived_from_op
    factor = op.inputs[-1] if op is not None and op.kind == "mul" and len(op.inputs) == 2 else None
    if factor is not None and factor.is_constant_static_dim() and factor.dimension == 2:
        return axis // 2
    return axis.div_left(2)


def _fix_gating(nn: types.ModuleType) -> None:
    """Fix 3 (see the module): ``nn.gating`` with the halves of :func:`_half`."""
    original = _scoped_function(nn, nn.gating)
    defaults = inspect.signature(original).parameters

    @functools.wraps(original)  # its name: returnn_common names the layers of a function after it
    def gating(
        x: Any,
        *,
        axis: Any = None,
        gate_func: Any = defaults["gate_func"].default,
        act_func: Any = defaults["act_func"].default,
    ) -> Any:
        if axis is None:
            axis = x.feature_dim
        a, b = nn.split(x, axis=axis, out_dims=[_half(axis)] * 2)
        return act_func(a) * gate_func(b)

    # typeshed's ModuleType knows no attributes set on a module (that works at runtime)
    nn.gating = nn.math_.gating = gating if original is nn.gating else nn.scoped(gating)  # type: ignore[attr-defined]


def _scoped_function(nn: types.ModuleType, func: Any) -> Any:
    """The function in ``func`` if that is ``nn.scoped``'s wrapper (returnn_common before 3834ae4, 2022-06-12: its
    signature is ``(*args, name=None, **kwargs)``, the function in its closure), else ``func``."""
    if not hasattr(nn, "scoped"):
        return func
    inner = [cell.cell_contents for cell in func.__closure__ or ()]
    return next((f for f in inner if isinstance(f, types.FunctionType) and f.__name__ == func.__name__), func)


def _fix_dim_generic(nn: types.ModuleType) -> None:
    """Fix 4 (see the module): ``get_dim_deps`` rebuilt from its own code, reading ``special`` where it read
    ``generic``, only where it reads ``generic``."""
    if not _reads_dim_generic(nn):
        return
    original = nn.base.get_dim_deps
    code = original.__code__
    names = tuple("special" if name == "generic" else name for name in code.co_names)
    fixed = types.FunctionType(
        code.replace(co_names=names), original.__globals__, original.__name__, original.__defaults__
    )
    functools.update_wrapper(fixed, original)
    nn.get_dim_deps = nn.base.get_dim_deps = fixed  # type: ignore[attr-defined]  # as for gating
