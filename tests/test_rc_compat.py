"""
i6_rc_jobs._compat.rc_compat: with it, the pinned returnn_common builds ``nn.Cond``, ``nn.Loop`` over a ``nn.LayerState`` and
the Conformer, and the pinned RETURNN constructs them (TF graph construction). It is applied by one explicit call,
never on import, and a second call changes nothing.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from returnn_common import nn

from i6_rc_jobs import rc_compat
from tests import rc_models

nn = rc_compat.apply(nn)


def _raw_dicts(model: nn.Module, out: nn.Tensor) -> tuple[dict, dict]:
    out.mark_as_default_output()
    config = nn.get_returnn_config()
    return config.get_extern_data_raw_dict(), config.get_net_dict_raw_dict(model)


def _input(feat: int = 8) -> tuple[nn.Tensor, nn.Dim]:
    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    return nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, nn.FeatureDim("in", feat)])), time_dim


def test_apply_is_explicit_and_idempotent():
    """Importing changes nothing; apply() takes the lazy proxy, returns the real package, and a second call is a
    no-op (the same objects)."""
    code = textwrap.dedent("""\
        import importlib
        from returnn.tensor import ControlFlowContext
        from returnn_common import nn as proxy
        from i6_rc_jobs import rc_compat

        real = importlib.import_module("returnn_common.nn")
        before = (real.ControlFlowContext, real.Cond.__init__, real.LayerState.__init__, real.gating)
        assert before[0] is ControlFlowContext
        nn = rc_compat.apply(proxy)
        assert nn is real
        patched = (nn.ControlFlowContext, nn.Cond.__init__, nn.LayerState.__init__, nn.gating)
        assert all(a is not b for a, b in zip(before, patched))
        assert rc_compat.apply(nn) is nn
        assert (nn.ControlFlowContext, nn.Cond.__init__, nn.LayerState.__init__, nn.gating) == patched
        print("ok")
        """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.stdout.strip().splitlines()[-1:] == ["ok"], result.stderr[-2000:]


def test_cond_builds_with_true_and_false_contexts():
    """nn.Cond: RETURNN's ControlFlowContext, the branches CondTrue and CondFalse with the cond layer's name as
    identifier (as RETURNN's own front end makes them); RETURNN constructs the net."""
    from returnn.tensor import ControlFlowContext

    class Net(nn.Module):
        def __init__(self, in_dim: nn.Dim):
            super().__init__()
            self.true_ = nn.Linear(in_dim, nn.FeatureDim("out", 4))
            self.false_ = nn.Linear(in_dim, self.true_.out_dim)

        def __call__(self, x: nn.Tensor) -> tuple[nn.Tensor, nn.Cond]:
            with nn.Cond(nn.length(nn.batch_dim) % 2 == 0) as cond:
                cond.true = self.true_(x)
                cond.false = self.false_(x)
            return cond.result, cond

    x, _ = _input()
    net = Net(x.feature_dim)
    out, cond = net(x)
    extern_data, network = _raw_dicts(net, out)
    true_ctx, false_ctx = cond.true_branch_control_flow_ctx, cond.false_branch_control_flow_ctx
    assert type(true_ctx) is type(false_ctx) is ControlFlowContext
    assert (true_ctx.kind, false_ctx.kind) == (ControlFlowContext.Types.CondTrue, ControlFlowContext.Types.CondFalse)
    assert true_ctx.identifier == false_ctx.identifier == "net/cond"  # the cond layer (in the call of Net) named it
    # The layers are named as without the compat wrappers (returnn_common names them after the call stack).
    assert set(network["cond"]["true_layer"]["subnetwork"]) == {"true_", "output"}
    assert set(network["cond"]["false_layer"]["subnetwork"]) == {"false_", "output"}
    assert "output" in rc_models.construct(extern_data, network)[1]


def test_loop_over_layer_state_builds():
    """nn.Loop with an LSTM state (a LayerState, which dm-tree 0.1.10 rebuilds from a generator) constructs."""

    class Net(nn.Module):
        def __init__(self, in_dim: nn.Dim):
            super().__init__()
            self.lstm = nn.LSTM(in_dim, nn.FeatureDim("lstm", 6))

        def __call__(self, x: nn.Tensor, *, spatial_dim: nn.Dim) -> nn.Tensor:
            loop = nn.Loop(axis=spatial_dim)
            loop.state.lstm = self.lstm.default_initial_state(batch_dims=[nn.batch_dim])
            with loop:
                y, loop.state.lstm = self.lstm(loop.unstack(x), spatial_dim=nn.single_step_dim, state=loop.state.lstm)
                out = loop.stack(y)
            return out

    x, time_dim = _input()
    net = Net(x.feature_dim)
    extern_data, network = _raw_dicts(net, net(x, spatial_dim=time_dim))
    assert network["loop"]["class"] == "rec" and "lstm" in network["loop"]["unit"]
    assert "output" in rc_models.construct(extern_data, network)[1]


def test_conformer_builds():
    """nn.ConformerEncoder: the GLU's halves are the model dim itself (the depthwise conv's in_dim), so RETURNN
    constructs it."""
    x, time_dim = _input()
    model_dim = nn.FeatureDim("model", 12)
    conformer = nn.ConformerEncoder(
        x.feature_dim, model_dim, ff_dim=nn.FeatureDim("ff", 16), input_layer=None, num_heads=2, num_layers=1
    )
    out, _ = conformer(x, in_spatial_dim=time_dim)
    extern_data, network = _raw_dicts(conformer, out)
    gating = network["layers"]["subnetwork"]["0"]["subnetwork"]["conv_block"]["subnetwork"]["gating"]
    assert gating["subnetwork"]["split"]["out_dims"] == [model_dim, model_dim]
    assert "output" in rc_models.construct(extern_data, network)[1]


def test_gating_of_a_dim_doubled_on_the_right_gives_its_half():
    """A GLU over ``model * 2`` (the factor on the right, as researchers' LConv blocks make it): the halves are
    ``model``, as returnn_common's ``axis // 2`` gave before RETURNN 91d31d240, so a Linear on ``model`` takes the
    GLU's output and RETURNN constructs it."""
    x, time_dim = _input()
    model_dim = nn.FeatureDim("model", 6)

    class Glu(nn.Module):
        def __init__(self):
            super().__init__()
            self.glu = nn.Linear(x.feature_dim, model_dim * 2)
            self.out = nn.Linear(model_dim, nn.FeatureDim("out", 3))

        def __call__(self, source: nn.Tensor) -> nn.Tensor:
            return self.out(nn.gating(self.glu(source)))

    net = Glu()
    extern_data, network = _raw_dicts(net, net(x))
    assert network["gating"]["subnetwork"]["split"]["out_dims"] == [model_dim, model_dim]
    assert "output" in rc_models.construct(extern_data, network)[1]


def _run_with_version(version: str, body: str) -> None:
    """Runs ``body`` in a process of its own (one returnn_common per process, as returnn_common's own tests), with
    ``nn`` the package of returnn_common at ``version`` (a versioned import) made to build by ``rc_compat.apply``
    and ``construct`` from tests.rc_models; it prints ``ok`` at its end."""
    code = textwrap.dedent("""\
        from i6_rc_jobs import rc_compat
        from i6_rc_jobs import import_
        from tests.rc_models import construct

        nn = rc_compat.apply(import_("github.com/rwth-i6/returnn_common", "nn", VERSION))
        nn.reset_default_root_name_ctx()


        class Root(nn.Module):
            pass


        def raw_dicts(out):
            out.mark_as_default_output()
            config = nn.get_returnn_config()
            return config.get_extern_data_raw_dict(), config.get_net_dict_raw_dict(Root())
        """).replace("VERSION", repr(version))
    result = subprocess.run(
        [sys.executable, "-c", code + textwrap.dedent(body) + 'print("ok")\n'],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.stdout.strip().splitlines()[-1:] == ["ok"], result.stderr[-2000:]


def test_gating_of_scoped_returnn_common():
    """returnn_common before 3834ae4 (2022-06-12) wraps nn.gating in nn.scoped: apply() finds the function in it, and
    the GLU's halves are the model dim, in the gating subnetwork of that time; RETURNN constructs it."""
    _run_with_version(
        "20220519-9b9fce8",
        """\
        time_dim, model_dim = nn.SpatialDim("time"), nn.FeatureDim("model", 6)
        x = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, 2 * model_dim]))
        extern_data, network = raw_dicts(nn.gating(x))
        assert network["gating"]["class"] == "subnetwork", network
        assert network["gating"]["subnetwork"]["split"]["out_dims"] == [model_dim, model_dim], network
        assert "gating/mul" in construct(extern_data, network)[1]
        """,
    )


def test_constant_of_returnn_common_reading_dim_generic():
    """returnn_common from c293121 (2022-08-23) to 2b06200 (2023-02-25) read Dim.generic in nn.get_dim_deps for every
    constant of a dynamic shape: with apply(), nn.zeros builds with the data as its shape dep; RETURNN constructs it."""
    _run_with_version(
        "20221213-283090d",
        """\
        time_dim, feat_dim = nn.SpatialDim("time"), nn.FeatureDim("in", 3)
        x = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, feat_dim]))
        extern_data, network = raw_dicts(x + nn.zeros([nn.batch_dim, time_dim, feat_dim]))
        assert network["zeros"]["shape_deps"] == ["data:data"], network
        assert "zeros" in construct(extern_data, network)[1]
        """,
    )
