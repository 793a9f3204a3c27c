"""Builders for ``i6_rc_jobs.build``: the models of tests.rc_models as serializers, by name. returnn_common is imported
inside the builder only, so that a manager that finds a build cached imports neither it nor TensorFlow."""

from __future__ import annotations

from typing import Any


def model(name: str, hash_scheme: str = "dict", **options: Any) -> Any:
    """The model ``name`` of ``tests.rc_models.ALL_BUILDERS`` built with ``options``, as a ReturnnCommonSerializer."""
    from i6_rc_jobs import ReturnnCommonSerializer
    from tests import rc_models

    extern_data, network = rc_models.ALL_BUILDERS[name](**options)
    return ReturnnCommonSerializer(extern_data=extern_data, network=network, hash_scheme=hash_scheme)
