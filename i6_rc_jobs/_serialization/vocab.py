"""RETURNN vocabularies (``Dim.vocab``, a ``returnn.datasets.util.vocabulary.Vocabulary``) as the options RETURNN
makes them from: a written dim gets them as ``Dim(..., vocab={...})``, which RETURNN passes to
``Vocabulary.create_vocab``. A vocab object keeps no record of its options: they are read off it and refused unless
``create_vocab`` makes an equal vocab of them (same class, labels, special labels, postfix)."""

from __future__ import annotations

from typing import Any

from i6_rc_jobs._serialization.errors import SerializationError

#: The vocab classes whose options can be read off the object, with the options their constructor sets itself (and
#: refuses as arguments).
_FIXED_OPTIONS = {"Vocabulary": (), "CharacterTargets": (), "Utf8ByteTargets": ("vocab_file", "unknown_label")}


def vocab_options(vocab: Any) -> dict[str, Any]:
    """The options of ``Vocabulary.create_vocab`` that make ``vocab`` again; a vocab file by its path."""
    from returnn.datasets.util.vocabulary import Vocabulary

    name = type(vocab).__name__
    if not isinstance(vocab, Vocabulary) or name not in _FIXED_OPTIONS:
        raise SerializationError(
            f"a vocab of class {type(vocab).__module__}.{type(vocab).__qualname__}, whose options cannot be read "
            f"back: use one of RETURNN's {', '.join(sorted(_FIXED_OPTIONS))}"
        )
    labels = {
        f"{special}_label": vocab.id_to_label(label_id)
        for special in ("bos", "eos", "pad")
        if (label_id := getattr(vocab, f"{special}_label_id")) is not None
    }
    options: dict[str, Any] = {"class": name, "vocab_file": vocab.vocab_file, "unknown_label": vocab.unknown_label}
    if vocab.vocab_file is None and name != "Utf8ByteTargets":  # labels given as such, not read from a file
        options["labels"] = list(vocab.labels)
    options.update(labels)
    for group in ("control_symbol", "user_defined_symbol"):
        symbols = getattr(vocab, f"{group}_ids")
        if symbols:
            options[f"{group}s"] = {key: vocab.id_to_label(label_id) for key, label_id in sorted(symbols.items())}
    if vocab.seq_postfix:
        options["seq_postfix"] = list(vocab.seq_postfix)
    if vocab.decode_seq_token_re is not None:
        options["single_whitespace_split"] = True
    for fixed in _FIXED_OPTIONS[name]:
        del options[fixed]
    again = Vocabulary.create_vocab(**options)
    if vocab_state(again) != vocab_state(vocab):
        raise SerializationError(
            f"{vocab!r}: the options {options!r} read off it make {again!r}, another vocab: give the dim a vocab "
            f"made by Vocabulary.create_vocab from options"
        )
    return options


def vocab_state(vocab: Any) -> tuple:
    """What RETURNN reads of a vocab: its class, labels, special label ids and postfix."""
    specials = tuple(getattr(vocab, f"{x}_label_id") for x in ("unknown", "bos", "eos", "pad"))
    symbols = (sorted(vocab.control_symbol_ids.items()), sorted(vocab.user_defined_symbol_ids.items()))
    split = vocab.decode_seq_token_re is not None
    return (type(vocab).__name__, vocab.vocab_file, list(vocab.labels), specials, symbols, vocab.seq_postfix, split)
