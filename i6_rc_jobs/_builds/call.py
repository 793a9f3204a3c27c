"""One call of a builder and its cache key: the Sisyphus hash of the builder's name and its arguments, told apart from
other calls of that hash by the digest of its exact pickle (builder and arguments), to which an entry's signature is
bound."""

from __future__ import annotations

import functools
import hashlib
import pickle
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from i6_rc_jobs._builds import job_paths
from i6_rc_jobs._builds.errors import BuildError
from i6_rc_jobs._builds.store import sha256_hex

_DESCRIPTION_CHARS = 200


@dataclass(frozen=True)
class Call:
    """One call of a builder, and where it is cached."""

    builder: Callable[..., Any]
    args: tuple
    kwargs: dict[str, Any]
    key: str = field(init=False)

    def __post_init__(self) -> None:
        from sisyphus.hash import sis_hash_helper

        object.__setattr__(
            self, "key", hashlib.sha256(sis_hash_helper((self.name, self.args, self.kwargs))).hexdigest()
        )

    @property
    def name(self) -> str:
        return f"{self.builder.__module__}.{self.builder.__qualname__}"

    @property
    def description(self) -> str:
        """The arguments, as a call shows them (cut at ``_DESCRIPTION_CHARS``)."""
        parts = [repr(arg) for arg in self.args] + [f"{name}={value!r}" for name, value in sorted(self.kwargs.items())]
        text = ", ".join(parts)
        return text if len(text) <= _DESCRIPTION_CHARS else text[: _DESCRIPTION_CHARS - 3] + "..."

    @functools.cached_property
    def data(self) -> bytes:
        """The pickled call, as the build process loads it."""
        try:
            return pickle.dumps((self.builder, self.args, self.kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            raise BuildError(f"the arguments of {self.name}({self.description}) cannot be pickled: {e}") from None

    @functools.cached_property
    def digest(self) -> str:
        """The SHA-256 of the pickled call: what tells apart calls that the Sisyphus hash does not."""
        return sha256_hex(self.data)

    @functools.cached_property
    def paths(self) -> dict[str, Any]:
        """The job outputs among the arguments, put back in the result (see :mod:`.job_paths`)."""
        return job_paths.argument_paths((self.args, self.kwargs))

    def check(self) -> None:
        """The builder must be found by its name in a process that imports its module (the build process does)."""
        module, qualname = self.builder.__module__, self.builder.__qualname__
        found = sys.modules.get(module)
        for part in qualname.split("."):
            found = getattr(found, part, None)
        where = "the manager's config" if module == "config" or module.startswith("config.") else None
        if found is not self.builder or "<locals>" in qualname or module == "__main__" or where:
            raise BuildError(
                f"builder {module}.{qualname}: a builder must be a module-level function of a module a build process "
                f"can import (the setup's recipe/ or a versioned module), not of {where or 'a function or __main__'}; "
                "move it there"
            )


def as_call(call: Any) -> Call:
    """A ``functools.partial`` or a ``(builder, args, kwargs)`` tuple as a :class:`Call`."""
    if isinstance(call, functools.partial):
        return Call(call.func, tuple(call.args), dict(call.keywords))
    builder, args, kwargs = call
    return Call(builder, tuple(args), dict(kwargs))
