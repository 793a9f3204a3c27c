"""Closed and open serializers: copies of a closed one share its dicts and its hash, an edit is seen by the edited
serializer only, and what was computed once is never stale. With real Sisyphus jobs and random sequences of
copies, pickles and edits (hypothesis)."""

from __future__ import annotations

import copy
import os
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from i6_core.returnn.config import ReturnnConfig
from sisyphus.job import created_jobs
from sisyphus.hash import sis_hash_helper

from i6_rc_jobs import CreateConfigJob, ReturnnCommonSerializer
from i6_rc_jobs._hashing.sis_hash import serializer_sis_hash
from i6_rc_jobs.jobs.config_file import config_code
from tests.support.cases import encoder_decoder
from tests.support.jobs import MakeCheckpoint

SETTINGS = settings(
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", 60)),
    derandomize="HYPOTHESIS_MAX_EXAMPLES" not in os.environ,
    deadline=None,
)

#: (operation, which serializer or kept dict, a value)
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(
            ["deepcopy", "copy", "pickle", "hash", "edit", "keep", "edit kept", "resize kept dim", "close", "unhashed"]
        ),
        st.integers(0, 7),
        st.integers(1, 4),
    ),
    max_size=20,
)


@pytest.fixture(autouse=True)
def _fresh_job_cache():
    """Sisyphus returns a job made before from its cache when the hash is the same: each test makes its own."""
    created_jobs.clear()


def _config(serializer) -> ReturnnConfig:
    return ReturnnConfig({"learning_rate": 0.01}, python_prolog=[serializer], black_formatting=False)


@SETTINGS
@given(OPERATIONS)
def test_copies_pickles_and_edits_never_see_each_other_and_what_is_remembered_is_never_stale(operations):
    pool = [encoder_decoder()]
    expected = [pool[0].get()]  # the code each serializer must write
    closings = [0]  # how often each was closed: a dict read before a closing is no longer its own
    opened = [False]  # read since made or closed: a shallow copy then shares the open dicts
    kept: list[tuple[int, int, dict]] = []  # dicts handed out: (serializer, its closings then, the dict)
    for operation, pick, value in operations:
        i = pick % len(pool)
        s = pool[i]
        if operation in ("deepcopy", "pickle"):
            pool.append(copy.deepcopy(s) if operation == "deepcopy" else pickle.loads(pickle.dumps(s)))
            expected.append(expected[i])
            closings.append(0)
            opened.append(opened[i] and operation == "pickle")  # unpickled open: it may share dicts pickled beside
        elif operation == "copy":
            twin = copy.copy(s)
            assert sis_hash_helper(twin) == serializer_sis_hash(s)
            if not opened[i]:  # an open one's shallow copy shares its open dicts, edits included: not a new member
                pool.append(twin)
                expected.append(expected[i])
                closings.append(0)
                opened.append(False)
        elif operation == "hash":
            sis_hash_helper(s)
        elif operation == "edit":
            s.network["enc"]["subnetwork"]["ff"]["dropout"] = value / 10
            expected[i] = s.get()
            opened[i] = True
        elif operation == "keep":
            kept.append((i, closings[i], s.network))
            opened[i] = True
        elif operation in ("edit kept", "resize kept dim") and kept:
            owner, closed_before, network = kept[pick % len(kept)]
            if operation == "edit kept":
                network["output"]["loss_scale"] = float(value)
            else:  # a DimRef read before: its fields, seen wherever the dim occurs
                network["enc"]["subnetwork"]["ff"]["out_dim"].size = 100 * value
            if closings[owner] == closed_before:
                expected[owner] = pool[owner].get()
        elif operation == "close":
            s.close()
            closings[i] += 1
            opened[i] = False
        elif operation == "unhashed":
            s.unhashed = frozenset(["extern_data"] if value % 2 else [])
        for j, other in enumerate(pool):
            assert other.get() == expected[j], f"serializer {j} after {operation} on {i}"
            assert sis_hash_helper(other) == serializer_sis_hash(other), f"stale hash of {j} after {operation} on {i}"


def test_jobs_share_a_closed_serializers_dicts_and_keep_them_when_it_is_edited_later():
    serializer = encoder_decoder()
    jobs = [CreateConfigJob(_config(serializer), check=check) for check in (False, True)]
    copies = [job.returnn_config.python_prolog[0] for job in jobs]
    assert all(c is not serializer for c in copies)
    assert all(c.sections()[1][1] is serializer.sections()[1][1] for c in copies), "a job copied the dicts"
    written = config_code(jobs[0].returnn_config)

    serializer.network["output"]["loss_scale"] = 0.5  # after the jobs were made
    assert config_code(jobs[0].returnn_config) == written == config_code(jobs[1].returnn_config)
    assert "0.5" in config_code(_config(serializer))
    assert CreateConfigJob(_config(serializer)).job_id() != jobs[0].job_id()


def test_an_edit_through_a_dict_taken_before_the_job_was_made_does_not_reach_the_job():
    serializer = encoder_decoder()
    network = serializer.network
    job = CreateConfigJob(_config(serializer))
    written, job_hash = config_code(job.returnn_config), sis_hash_helper(job.returnn_config)
    network["output"]["loss_scale"] = 0.5
    assert config_code(job.returnn_config) == written
    assert sis_hash_helper(job.returnn_config) == job_hash != sis_hash_helper(_config(serializer))


def test_paths_in_a_closed_serializer_are_job_inputs():
    checkpoint = MakeCheckpoint("test_paths_in_a_closed_serializer").out
    serializer = encoder_decoder()
    serializer.network["enc"]["load_on_init"] = checkpoint
    closed = copy.deepcopy(serializer)  # a deep copy is closed
    jobs = [CreateConfigJob(_config(closed)) for _ in range(2)] + [CreateConfigJob(_config(closed), check=True)]
    for job in jobs:
        assert [p.creator for p in job._sis_inputs] == [checkpoint.creator]
    assert f'"load_on_init": "{checkpoint.get_path()}"' in closed.get()
    assert CreateConfigJob(_config(encoder_decoder()))._sis_inputs == set()


def test_changing_unhashed_after_hashing_changes_the_hash():
    serializer = encoder_decoder()
    before = sis_hash_helper(serializer)
    serializer.unhashed = frozenset(["extern_data"])
    assert sis_hash_helper(serializer) != before
    serializer.unhashed = frozenset()
    assert sis_hash_helper(serializer) == before


def test_closing_after_an_edit_lets_jobs_share_again_and_detaches_the_dicts_read_before():
    serializer = encoder_decoder()
    network = serializer.network
    network["output"]["loss_scale"] = 0.5
    serializer.close()
    jobs = [CreateConfigJob(_config(serializer), check=check) for check in (False, True)]
    assert all(job.returnn_config.python_prolog[0].sections()[1][1] is serializer.sections()[1][1] for job in jobs)
    written, hashed = serializer.get(), sis_hash_helper(serializer)
    assert "0.5" in written
    network["output"]["loss_scale"] = 0.25  # read before the closing: no longer the serializer's
    assert serializer.get() == written and sis_hash_helper(serializer) == hashed == serializer_sis_hash(serializer)
    serializer.network["output"]["loss_scale"] = 0.25  # reading again opens it again
    assert sis_hash_helper(serializer) != hashed


def test_a_serializer_made_from_another_ones_dicts_owns_its_dims():
    first = encoder_decoder()
    second = type(first)(extern_data=first.extern_data, network=first.network)
    written, hashed = second.get(), sis_hash_helper(second)
    assert written == first.get()  # the same dims, named alike
    first.network["enc"]["subnetwork"]["ff"]["out_dim"].size = 7  # through the first one's dicts
    assert second.get() == written and sis_hash_helper(second) == hashed == serializer_sis_hash(second)
    assert sis_hash_helper(first) != hashed


def test_a_serializer_pickled_with_a_dict_read_from_it_stays_open_so_its_hash_follows_that_dict():
    serializer = encoder_decoder()
    network = serializer.network
    copied, copied_network = pickle.loads(pickle.dumps((serializer, network)))
    before = sis_hash_helper(copied)
    copied_network["output"]["an_option"] = 0.5
    assert "an_option" in copied.get() and sis_hash_helper(copied) == serializer_sis_hash(copied) != before
    assert "an_option" not in serializer.get()


def test_a_code_wrapper_given_to_a_serializer_is_its_own_copy():
    from i6_core.returnn.config import CodeWrapper

    given = CodeWrapper("my_function")
    serializer = ReturnnCommonSerializer(network={"output": {"class": "eval", "eval": given}})
    before = sis_hash_helper(serializer)
    given.code = "other_function"
    assert sis_hash_helper(serializer) == before and "my_function" in serializer.get()


def test_a_serializer_prints_as_one_short_line():
    """``print(serializer)`` in ``sis console``: the parts, dims and hash, not the whole code."""
    serializer = encoder_decoder()
    text = str(serializer)
    assert text == repr(serializer) and "\n" not in text and len(text) < 200
    digest = serializer._sis_hash().decode().rstrip(")").rpartition(" ")[2]
    assert f"hash {digest[:12]}>" in text and "network (" in text and "extern_data (" in text


def test_an_edit_of_a_dim_names_and_dims_handed_out_leaves_a_closed_serializer_and_its_hash_alone():
    serializer = encoder_decoder()
    serializer.close()
    code, digest = serializer.get(), serializer._sis_hash()
    _, dims = serializer.names_and_dims()
    static = next(dim for dim in dims.values() if dim.size is not None and dim.op is None and dim.copy_of is None)
    static.size += 1
    assert serializer.get() == code and serializer._sis_hash() == digest
