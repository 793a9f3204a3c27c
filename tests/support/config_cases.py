"""A fixed PyTorch / RETURNN-frontend config for the golden files of ReturnnConfigSerializer (written code, hash): the
example's values plus the identities a config can carry. Pure: every call builds new dims."""

from __future__ import annotations

import sys

from returnn.tensor import Dim, batch_dim

from tests.support.sisyphus_setup import REPO

sys.path.insert(0, str(REPO / "recipe_examples" / "recipe"))
import task12ax_rf_model  # noqa: E402  (the example's model module, as a setup's recipe/ has it)


def rf_config_values() -> dict:
    """The example's values, a same_as copy of another kind in model_outputs, a derived dim and a tuple."""
    values = task12ax_rf_model.config_values()
    classes = values["extern_data"]["classes"]["sparse_dim"]
    time = values["extern_data"]["data"]["dims"][1]
    values["model_outputs"] = {
        "output": {"dims": [batch_dim, time, classes.copy(same_as_self=True, kind=Dim.Types.Feature)]}
    }
    values["aux"] = [time.ceildiv_right(2), (classes, 3)]
    return values
