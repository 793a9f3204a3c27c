"""The questions a model's code may ask about the machine it runs on (its hostname, its GPUs), refused while the code
is recorded: the build runs where the manager runs, the job on another machine, so an answer that chooses what is
built or run would make the hash name code the job does not run. Libraries may ask (they are identified as a whole);
the setup's own code may not, and its build fails with one line that names where it asked."""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import socket
import sys
from typing import Any, Callable, Iterator

#: Where each question is asked: (module, attribute); torch's are looked up only if torch is loaded.
QUESTIONS = (
    (socket, "gethostname"),
    (socket, "getfqdn"),
    (os, "uname"),
    (platform, "node"),
    (platform, "uname"),
)
TORCH_QUESTIONS = (
    ("torch.cuda", "is_available"),
    ("torch.cuda", "device_count"),
    ("torch.cuda", "current_device"),
    ("torch.cuda", "get_device_name"),
    ("torch.cuda", "get_device_properties"),
    ("torch.cuda", "get_device_capability"),
    ("torch.cuda", "mem_get_info"),
    ("torch.backends.mps", "is_available"),
)


@contextlib.contextmanager
def refused(is_setup_file: Callable[[str], bool]) -> Iterator[list[str]]:
    """Makes each question refuse (raise a RuntimeError) where code in a file for which ``is_setup_file``
    holds asks it, and lists where it was asked (also where the code caught the error)."""
    asked: list[str] = []
    patched: list[tuple[Any, str, Any]] = []

    def refusing(owner: Any, attribute: str, function: Any) -> Callable[..., Any]:
        @functools.wraps(function)  # (torch._dynamo, first imported in a build, reads mps.is_available.__wrapped__)
        def asking(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1)
            if is_setup_file(caller.f_code.co_filename):
                where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
                asked.append(f"{where} asks {owner.__name__}.{attribute}()")
                raise RuntimeError(
                    f"{owner.__name__}.{attribute}() asked while the model code is recorded: where the job runs the "
                    "answer differs, so the hash would not name what runs; choose in the config and pass it as an "
                    "argument"
                )
            return function(*args, **kwargs)

        return asking

    owners = [(owner, attribute) for owner, attribute in QUESTIONS]
    owners += [(sys.modules[name], attribute) for name, attribute in TORCH_QUESTIONS if name in sys.modules]
    try:
        for owner, attribute in owners:
            function = getattr(owner, attribute, None)
            if function is not None:
                patched.append((owner, attribute, function))
                setattr(owner, attribute, refusing(owner, attribute, function))
        yield asked
    finally:
        for owner, attribute, function in reversed(patched):
            setattr(owner, attribute, function)
