"""What a serializer of config values shares, whatever it holds (a net dict, or any config's values): plain data
that pickles, is shared between jobs while nobody can change it, and is written as code with its dim prolog. The
subclasses say what the data is (:meth:`sections`) and how it is written (:meth:`_render`)."""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterable, Optional

from sisyphus.delayed_ops import DelayedBase

from i6_rc_jobs._serialization.copying import copy_tree
from i6_rc_jobs._serialization.pycode import CodeWriter
from i6_rc_jobs._serialization.refs import DimRef
from i6_rc_jobs._serialization.values import sisyphus_values


class SerializedCode(DelayedBase):
    """Sits in an i6_core ``ReturnnConfig`` (``python_prolog=[...]`` or ``python_epilog=[...]``) and writes its values
    with the code defining their dims.

    Until its data is read (the serializer is *closed*), nobody but the serializer holds it, so it cannot change: the
    hash and the Sisyphus values in it are computed once, and copies (Sisyphus deep-copies every job's arguments)
    share it. Reading it *opens* the serializer: a copy sharing the data first takes its own, and everything is
    computed afresh each time, since the reader may edit it any time, until :meth:`close`. (A deep copy of an open
    serializer is closed.)"""

    _data: dict[str, Any]
    hash_value: Any
    unhashed: frozenset[str]
    hash_scheme: str
    #: The RETURNN behavior_version the values need, checked against the config's; not hashed.
    min_behavior_version: Optional[int]

    def sections(self) -> list[tuple[str, Any]]:
        """The values, by name, in the order they are hashed. For reading only (the serializer stays closed)."""
        raise NotImplementedError

    def stage_epochs(self) -> list[int]:
        """The epochs at which RETURNN builds another network: ``[1]`` unless the values are staged."""
        return [1]

    def _defined_names(self) -> Iterable[str]:
        """The names the written code binds besides dims and imports."""
        raise NotImplementedError

    def _render(self, resolve_delayed: bool = True) -> tuple[CodeWriter, list[str], list[str]]:
        """Writes the values, then the lines of the dims they name: (writer, dim lines, value code parts)."""
        raise NotImplementedError

    def _reset_sharing(self) -> None:
        """Closed, the dicts its own, nothing computed yet."""
        self._open = False
        self._shared = False  # True: another closed serializer may hold the same dicts
        self._computed: dict[tuple, Any] = {}  # valid while closed; shared with the serializers sharing the dicts

    def _opened(self) -> dict[str, Any]:
        """The dicts, for a caller who may keep and edit them: the serializer is open from now on."""
        if not self._open:
            if self._shared:
                self._data = copy_tree(self._data, {})
            self._open, self._shared, self._computed = True, False, {}
        return self._data

    def close(self) -> None:
        """Done editing: the serializer takes a copy of its dicts as its own and is closed again, so that the jobs
        made from it from now on share them and the hash. Dicts read from it before are no longer its own (read
        them again to edit more, which opens it again)."""
        if self._open:
            self._data = copy_tree(self._data, {})
            self._reset_sharing()

    def _once(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()``, remembered under ``key`` while the serializer is closed."""
        if self._open:
            return compute()
        if key not in self._computed:
            self._computed[key] = compute()
        return self._computed[key]

    def __copy__(self) -> SerializedCode:
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        if not self._open:
            self._shared = twin._shared = True
        return twin

    def __deepcopy__(self, memo: dict) -> SerializedCode:
        """Sisyphus deep-copies every job's arguments: a closed serializer's copy shares its dicts and what was
        computed from them (O(1), no memory); an open one's dicts are copied (see :mod:`.copying`), and the copy is
        closed."""
        if self._open:
            twin = object.__new__(type(self))
            memo[id(self)] = twin
            twin._data = copy_tree(self._data, memo)
            twin._reset_sharing()
        else:
            twin = copy.copy(self)
            memo[id(self)] = twin
        twin.hash_value = copy.deepcopy(self.hash_value, memo)
        twin.unhashed = copy.deepcopy(self.unhashed, memo)
        twin.hash_scheme = self.hash_scheme
        twin.min_behavior_version = self.min_behavior_version
        return twin

    def __getstate__(self) -> dict[str, Any]:
        state = {"data": self._data, "hash_value": self.hash_value, "unhashed": self.unhashed}
        if self._open:  # pickled with dicts read from it, the copy shares them with the copies of those: open, too
            state["open"] = True
        if self.hash_scheme != "dict":  # pickles of the default scheme stay as they were
            state["hash_scheme"] = self.hash_scheme
        if self.min_behavior_version is not None:
            state["min_behavior_version"] = self.min_behavior_version
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._data, self.hash_value, self.unhashed = state["data"], state["hash_value"], state["unhashed"]
        self._reset_sharing()
        self._open = state.get("open", False)
        self.hash_scheme = state.get("hash_scheme", "dict")
        self.min_behavior_version = state.get("min_behavior_version")

    def is_set(self) -> bool:
        return True

    def __sis_state__(self) -> dict[str, Any]:
        """What Sisyphus looks into to find a job's inputs (``tools.extract_paths``, twice for every new job): the
        Sisyphus values (paths, variables, delayed ops) in the dicts, instead of the whole dicts. (The hash is
        ``_sis_hash``, the subclass's.)"""
        values = self._once(("sisyphus_values",), lambda: sisyphus_values(self.sections()))
        return {"sisyphus_values": values, "hash_value": self.hash_value}

    def get(self) -> str:
        """The complete code: imports, the dim prolog, then the values (see the subclass)."""
        return self._code(*self._render())

    @property
    def dim_prolog(self) -> str:
        """The code that defines the dims the dicts use now (imports included)."""
        writer, dims, _ = self._render()
        return self._code(writer, dims, [])

    def dim_names(self) -> list[str]:
        """The variable names the written code defines or imports for dims."""
        writer, _, _ = self._render()
        return list(writer.dims)

    def code_and_names(self) -> tuple[str, dict[str, Optional[str]], dict[str, DimRef]]:
        """``get()`` and every name it binds, from one rendering: the names it defines (dims, ``extern_data``,
        ``network`` or ``get_network``) map to None, the names it imports to what they are (``module.name``). What
        must not clash with the keys of the config around it, nor with another serializer's names. Third, the dims
        it names, by name: what a DimRef in the config's values, written as its name, refers to."""
        writer, dims, parts = self._render()
        names, named_dims = self._names(writer)
        return self._code(writer, dims, parts), names, named_dims

    def _names(self, writer: CodeWriter) -> tuple[dict[str, Optional[str]], dict[str, DimRef]]:
        names: dict[str, Optional[str]] = dict(writer.imports())
        names.update((name, None) for name, ref in writer.dims.items() if ref.global_name is None)
        names.update((name, None) for name in self._defined_names())
        return names, dict(writer.dims)

    def names_and_dims(self) -> tuple[dict[str, Optional[str]], dict[str, DimRef]]:
        """The names and dims of :meth:`code_and_names`, without the code, remembered while closed: what the checks
        of a config made in the manager need, once for all the jobs that share the serializer. Sisyphus values are not
        asked for their values, which may not be computed yet. The dims are copies: an edit of one cannot change the
        dicts of a closed serializer behind its remembered hash."""
        names, dims = self._once(("names_and_dims",), lambda: self._names(self._render(resolve_delayed=False)[0]))
        return dict(names), copy_tree(dims, {})

    def _preamble(self) -> list[str]:
        """Lines before the imports (none by default)."""
        return []

    def _code(self, writer: CodeWriter, dims: list[str], parts: list[str]) -> str:
        imports = "\n".join([*self._preamble(), *writer.pins.lines(), *writer.import_lines()])
        return "\n\n".join([*([imports] if imports else []), *(["\n".join(dims)] if dims else []), *parts]) + "\n"
