"""The example's model: a small returnn_common Conformer encoder for Task12AX, built by ``i6_rc_jobs.build`` in a
build process of its own and cached, so that the manager imports neither returnn_common nor TensorFlow.

A builder lives in the setup's recipe/ (here) or in a versioned module, never in config/: the build process imports
it by name. Everything it depends on is recorded by that process (see docs/guide/builds.md)."""

from i6_rc_jobs import ReturnnCommonSerializer, rc_compat
from i6_rc_jobs import import_

#: returnn_common as of 2025-10-20 (the commit this checkout is tested with).
RETURNN_COMMON = "github.com/rwth-i6/returnn_common", "20251020-f7ad63a58835"
#: ``nn.min_returnn_behavior_version`` of that version, for the config: the manager does not import returnn_common.
BEHAVIOR_VERSION = 16


def returnn_common_nn():
    """returnn_common's nn at RETURNN_COMMON, from the import cache (fetched on first use), made to build with the
    installed RETURNN (:func:`i6_rc_jobs.rc_compat.apply`: the Conformer's GLU needs it)."""
    repo, version = RETURNN_COMMON
    return rc_compat.apply(import_(repo, "nn", version))


def conformer_model() -> ReturnnCommonSerializer:
    """returnn_common's ConformerEncoder (one block of model dim 32, no downsampling: one output per input frame) with
    a linear output over the 2 classes, for the 9 features of Task12AX; CE loss, frame error rate as error.
    One block learns the task in 5 epochs; with two, RETURNN's recursive construction of the nested net dict exceeds
    Python's default recursion limit in rnn.py (RecursionError)."""
    nn = returnn_common_nn()

    class Model(nn.Module):
        def __init__(self, in_dim: nn.Dim, model_dim: nn.Dim, classes_dim: nn.Dim):
            super().__init__()
            self.encoder = nn.ConformerEncoder(
                in_dim,
                model_dim,
                num_layers=1,
                input_layer=None,
                ff_dim=nn.FeatureDim("ff", 64),
                num_heads=4,
                conv_kernel_size=8,
            )
            self.out = nn.Linear(model_dim, classes_dim)

        def __call__(self, x: nn.Tensor, *, spatial_dim: nn.Dim) -> nn.Tensor:
            x, _ = self.encoder(x, in_spatial_dim=spatial_dim)
            return self.out(x)

    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    in_dim = nn.FeatureDim("input", 9)
    classes_dim = nn.FeatureDim("classes", 2)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_dim]))
    classes = nn.get_extern_data(nn.Data("classes", dim_tags=[nn.batch_dim, time_dim], sparse_dim=classes_dim))
    model = Model(in_dim, nn.FeatureDim("model", 32), classes_dim)
    logits = model(data, spatial_dim=time_dim)
    nn.softmax(logits, axis=classes_dim).mark_as_default_output()
    nn.cross_entropy(target=classes, estimated=logits, estimated_type="logits", axis=classes_dim).mark_as_loss("ce")
    labels = nn.reduce(logits, mode="argmax", axis=classes_dim)
    nn.cast(nn.compare(labels, classes, kind="not_equal"), dtype="float32").mark_as_loss("fer", as_error=True)
    return ReturnnCommonSerializer.from_returnn_common(model)
