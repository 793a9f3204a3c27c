"""A model of the installed returnn_common built without ``rc_compat.apply``: the mistake the build tests and the
manager tests make on purpose."""

from __future__ import annotations


def conformer() -> None:
    """A one-block Conformer: fails inside returnn_common (a ReturnnConstructTemplateException about
    ``2*model//2``), a Transformer would build."""
    from returnn_common import nn

    nn.reset_default_root_name_ctx()
    time_dim, model_dim = nn.SpatialDim("time"), nn.FeatureDim("model", 8)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, model_dim]))
    encoder = nn.ConformerEncoder(
        model_dim,
        model_dim,
        num_layers=1,
        input_layer=None,
        ff_dim=nn.FeatureDim("ff", 16),
        num_heads=2,
        conv_kernel_size=3,
    )
    encoder(data, in_spatial_dim=time_dim)
