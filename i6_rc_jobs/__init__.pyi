"""The public API of i6_rc_jobs, for IDEs and type checkers, and the one list of it: ``i6_rc_jobs/__init__.py``
reads these imports to load each name when it is first used, and makes ``__all__`` of them."""

# What a config holds.
from i6_rc_jobs.serializers import ReturnnCommonSerializer as ReturnnCommonSerializer
from i6_rc_jobs.serializers import ReturnnConfigSerializer as ReturnnConfigSerializer
from i6_rc_jobs._serialization.refs import DimRef as DimRef
from i6_rc_jobs._serialization.errors import SerializationError as SerializationError

# Configs and jobs.
from i6_rc_jobs.jobs.config_file import CheckedReturnnConfig as CheckedReturnnConfig
from i6_rc_jobs.jobs.create_config import CreateConfigJob as CreateConfigJob
from i6_rc_jobs.jobs.config_file import write_config_file as write_config_file
from i6_rc_jobs.jobs.config_file import config_code as config_code

# returnn_common compatibility.
from i6_rc_jobs._compat import rc_compat as rc_compat
from i6_rc_jobs._compat.failure_hints import install_failure_hints as install_failure_hints

# Builds out of the manager.
from i6_rc_jobs._builds.default import build as build
from i6_rc_jobs._builds.default import build_many as build_many
from i6_rc_jobs._builds.builds import Builds as Builds
from i6_rc_jobs._builds.errors import BuildError as BuildError
from i6_rc_jobs._builds.record import depend_on as depend_on
from i6_rc_jobs._builds.server_link import stop_servers as stop_servers

# Content hashes of model code.
from i6_rc_jobs._code_hash.marker import by_content as by_content
from i6_rc_jobs._code_hash.marker import ByContent as ByContent
from i6_rc_jobs._code_hash.watch import watch_code as watch_code
from i6_rc_jobs._code_hash.fingerprint import CodeFingerprint as CodeFingerprint
from i6_rc_jobs._code_hash.fingerprint import DEFAULT_LIBRARIES as DEFAULT_LIBRARIES

# Hashes of what a torch model computes.
from i6_rc_jobs._computation.inputs import Inputs as Inputs
from i6_rc_jobs._computation.inputs import TensorSpec as TensorSpec
from i6_rc_jobs._computation.fingerprint import ComputationFingerprint as ComputationFingerprint
from i6_rc_jobs._computation.fingerprint import computation_fingerprint as computation_fingerprint
from i6_rc_jobs._computation.errors import NotCaptured as NotCaptured

# Versioned imports.
from i6_rc_jobs._imports.loader import import_ as import_
from i6_rc_jobs._imports.errors import VersionedImportError as VersionedImportError

# Checks with RETURNN and explaining hashes.
from i6_rc_jobs._verify.returnn_check import construct_networks as construct_networks
from i6_rc_jobs._verify.returnn_check import NetworkCheckError as NetworkCheckError
from i6_rc_jobs._verify.semantics import same_model as same_model
from i6_rc_jobs._cli.explain import explain as explain
