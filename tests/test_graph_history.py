"""bench.graph_history's records: a model built by a fresh process at a returnn_common commit, with both hashes, the
pickled serializer they are recomputed from, and the semantic fingerprint; at the pinned commit the same dict hash as
the model built here with the installed returnn_common (tests.rc_models)."""

from __future__ import annotations

import contextlib
import io

import pytest

from bench import graph_history
from i6_rc_jobs import ReturnnCommonSerializer
from i6_rc_jobs._hashing.graph_rules import GRAPH_FORMAT_VERSION
from tests import rc_models
from tests.support.pins import version

pytestmark = pytest.mark.slow  # builds a model with two returnn_commons
MODEL = "enc_dec_loop"
#: Before nn.scoped was removed: most adapters of tests.rc_builders are at work here.
OLD = "20220519-9b9fce8309da"


def test_records_of_an_old_and_the_pinned_commit(tmp_path):
    pinned = version("returnn_common")
    assert pinned in graph_history.COMMITS and OLD in graph_history.COMMITS
    records = {}
    for commit in (OLD, pinned):
        record, how = graph_history.build_record(commit, MODEL, tmp_path)
        assert (how, record["error"], record["version"], record["model"]) == ("built", None, commit, MODEL)
        assert record["hashes"]["dict"].startswith("(ReturnnCommonSerializer, v1, ")
        assert record["hashes"]["graph"].startswith(f"(ReturnnCommonSerializer, graph v{GRAPH_FORMAT_VERSION}, ")
        assert graph_history.hashes(record["serializer"]) == record["hashes"]  # what --rehash recomputes
        fingerprint = record["fingerprint"]
        assert fingerprint.params and set(fingerprint.init) == set(fingerprint.params) and fingerprint.output.size
        assert not fingerprint.differences(fingerprint)
        cached, how = graph_history.build_record(commit, MODEL, tmp_path)
        assert how == "cached" and cached["hashes"] == record["hashes"]
        records[commit] = record

    with contextlib.redirect_stdout(io.StringIO()):
        extern_data, network = rc_models.enc_dec_loop()
    direct = ReturnnCommonSerializer(extern_data=extern_data, network=network)
    assert records[pinned]["hashes"]["dict"] == direct._sis_hash().decode()
