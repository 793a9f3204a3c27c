"""Run at 0.6.0 (e471d4e): pickles what a job holds, for the moved-modules test."""

import functools
import pickle
import sys
import json
import numpy
from sisyphus.hash import short_hash
from i6_rc_jobs import ReturnnConfigSerializer, CheckedReturnnConfig
from i6_rc_jobs.code_hash.marker import ByContent
from i6_rc_jobs.code_hash.fingerprint import CodeFingerprint
from tests.support.cases import CASES
from tests.support.golden import config_cases

serializers = {name: make() for name, make in sorted({**CASES, **config_cases()}.items())}
marker = ByContent("task12ax_rf_model", "get_model")
marker._fingerprint = CodeFingerprint(
    reference="task12ax_rf_model.get_model",
    constructed=True,
    modules={"task12ax_rf_model": {"file": "recipe/task12ax_rf_model.py", "digest": "0" * 64, "definitions": {}}},
    libraries={"returnn": "b46ff5f0f337"},
)
torch_config = ReturnnConfigSerializer(
    {
        "model_factory": marker,
        "scale": numpy.float32(0.5),
        "f": functools.partial(json.dumps, indent=2),
        "g": json.dumps,
    }
)
checked = CheckedReturnnConfig(
    {"backend": "torch", "num_epochs": 2}, python_prolog=[torch_config, serializers["staged"]]
)
kept = {"serializers": serializers, "torch_config": torch_config, "checked": checked}
hashes = {name: short_hash(value) for name, value in {**serializers, "checked": checked}.items()}
with open(sys.argv[1], "wb") as f:
    pickle.dump({"kept": kept, "hashes": hashes}, f, protocol=4)
print(len(serializers), "serializers")
