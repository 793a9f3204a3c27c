"""The content hash of model code (``i6_rc_jobs._code_hash``) over i6_models' history: the Conformer parts and
assemblies at every commit that touched ``i6_models/parts/conformer`` or ``i6_models/assemblies/conformer``. Run from
the repository root:

    .venv/bin/python -m bench.code_hash [--repo .deps/src/i6_models] [--out bench/results/code_hash.json]

For each commit, i6_models is exported (``git archive``) into a directory of its own, and one process with torch
takes each part present there (feed-forward, convolution, MHSA, relative-position MHSA, the blocks and encoders of
each version): in a forked child, the fingerprint ``by_content`` hashes by (``recorded_code``, as a build records it,
with i6_models hashed as setup code, not identified by its commit); then the part built with seed 0 in eval mode and
run on a fixed input with padding, in eval mode and in train mode (dropout drawn from a fixed seed). Two neighbouring
commits compute the same for a part iff its parameter names and shapes are equal and the newer one, given the older
one's parameters by name, gives the same outputs in both modes (to 1e-5).
A commit only changes comments, docstrings or formatting iff every module of i6_models compiles to the same
bytecode without docstrings (``compile(optimize=2)``, line numbers ignored). Targets: the hash moves for every part
whose computation changed, and for no part at a commit that only changes comments, docstrings or formatting.

The same for the hash of ``by_content(..., computation=Inputs.of(...))`` (the part's forward captured with features of
shape ``(B, T, 16)``, ``T`` in 2..300, and a mask where it takes one): it must move for every part that computes
otherwise, and should stay where only the code changed; its table follows the first, with the captures refused."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import types
import typing
from typing import Any, Optional

REPO = pathlib.Path(__file__).resolve().parents[1]
TOUCHED = ("i6_models/parts/conformer", "i6_models/assemblies/conformer")
#: The parts judged, by module and class (its config is the class's name + "Config").
PARTS = (
    ("i6_models.parts.conformer.feedforward", "ConformerPositionwiseFeedForwardV1"),
    ("i6_models.parts.conformer.feedforward", "ConformerPositionwiseFeedForwardV2"),
    ("i6_models.parts.conformer.convolution", "ConformerConvolutionV1"),
    ("i6_models.parts.conformer.convolution", "ConformerConvolutionV2"),
    ("i6_models.parts.conformer.mhsa", "ConformerMHSAV1"),
    ("i6_models.parts.conformer.mhsa", "ConformerMHSAV2"),
    ("i6_models.parts.conformer.mhsa_rel_pos", "ConformerMHSARelPosV1"),
    ("i6_models.assemblies.conformer.conformer_v1", "ConformerBlockV1"),
    ("i6_models.assemblies.conformer.conformer_v1", "ConformerEncoderV1"),
    ("i6_models.assemblies.conformer.conformer_v2", "ConformerBlockV2"),
    ("i6_models.assemblies.conformer.conformer_v2", "ConformerEncoderV2"),
    ("i6_models.assemblies.conformer.conformer_rel_pos_v1", "ConformerRelPosBlockV1"),
    ("i6_models.assemblies.conformer.conformer_rel_pos_v1", "ConformerRelPosEncoderV1"),
)
DIM = 16
#: Config values by field name (fields with a default keep it).
VALUES: dict[str, Any] = {
    "input_dim": DIM,
    "hidden_dim": 32,
    "channels": DIM,
    "kernel_size": 3,
    "dropout": 0.1,
    "att_weights_dropout": 0.1,
    "num_att_heads": 2,
    "with_bias": True,
    "learnable_pos_emb": False,
    "rel_pos_clip": 8,
    "with_linear_pos": True,
    "with_pos_bias": True,
    "separate_pos_emb_per_head": True,
    "pos_emb_dropout": 0.1,
    "dropout_broadcast_axes": None,
    "num_layers": 2,
}
TOLERANCE = 1e-5
#: How a part's code changed between two commits where it computes the same (see ``_edit_kind``).
EDITS = ("code", "cosmetic", "none")


# -- in the process of one version ------------------------------------------------------------------------------


def _config(cls: type) -> Any:
    """A config of ``cls`` with the bench's values; nested configs and the frontend made likewise."""
    import torch

    hints = typing.get_type_hints(cls)
    values = {}
    for field in dataclasses.fields(cls):
        kind = hints[field.name]
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        if field.name == "frontend":
            values[field.name] = _frontend_factory()
        elif field.name == "norm":
            values[field.name] = torch.nn.BatchNorm1d(DIM)
        elif field.name == "activation":
            values[field.name] = torch.nn.functional.silu
        elif field.name in VALUES:
            values[field.name] = VALUES[field.name]
        elif dataclasses.is_dataclass(kind) or (inner and dataclasses.is_dataclass(inner[0])):
            values[field.name] = _config(kind if dataclasses.is_dataclass(kind) else inner[0])
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise KeyError(f"{cls.__name__}.{field.name}: no bench value")
    return cls(**values)


def _frontend_factory() -> Any:
    """The encoders' frontend, the same at every commit: a linear map of the features."""
    from i6_models.config import ModelConfiguration, ModuleFactoryV1

    config_class = dataclasses.dataclass(
        type("BenchFrontendConfig", (ModelConfiguration,), {"__annotations__": {"features": int}})
    )
    return ModuleFactoryV1(_frontend_class(config_class), config_class(DIM))


def _frontend_class(config_class: type) -> type:
    import torch

    class BenchFrontend(torch.nn.Module):
        def __init__(self, cfg: Any):
            super().__init__()
            self.linear = torch.nn.Linear(cfg.features, DIM)

        def forward(self, x: Any, mask: Any) -> Any:
            return self.linear(x), mask

    BenchFrontend.__init__.__annotations__["cfg"] = config_class  # ModuleFactoryV1 checks it
    return BenchFrontend


def _part(module_name: str, class_name: str) -> Optional[tuple[type, Any]]:
    """The part's class and a config for it, None if this version has no such part."""
    import importlib

    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    cls = getattr(module, class_name, None)
    config_class = getattr(module, class_name + "Config", None)
    if cls is None or config_class is None:
        return None
    return cls, _config(config_class)


def _inputs() -> tuple[Any, Any]:
    import torch

    generator = torch.Generator().manual_seed(1234)
    x = torch.randn(2, 7, DIM, generator=generator)
    mask = torch.tensor([[True] * 7, [True] * 5 + [False] * 2])
    return x, mask


def _takes_mask(cls: type) -> bool:
    """Whether the part's forward takes a sequence mask after the features (two required arguments, besides
    ``self``)."""
    import inspect

    params = [
        p
        for p in list(inspect.signature(cls.forward).parameters.values())[1:]
        if p.default is inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD and p.kind is not p.VAR_POSITIONAL
    ]
    return len(params) >= 2


def _run(model: Any, x: Any, mask: Any) -> Any:
    import torch

    with torch.no_grad():
        out = model(x, mask) if _takes_mask(type(model)) else model(x)
    out = out[0] if isinstance(out, tuple) else out  # an encoder's (output, mask)
    return torch.cat([o.flatten() for o in out]) if isinstance(out, list) else out  # the outputs of its layers


def _outputs(model: Any, x: Any, mask: Any) -> dict[str, Any]:
    """The outputs in eval mode, and in train mode with dropout drawn from a fixed seed."""
    import torch

    outputs = {"eval": _run(model.eval(), x, mask)}
    torch.manual_seed(7)
    outputs["train"] = _run(model.train(), x, mask)
    return outputs


def _computation_inputs(masked: bool) -> Any:
    """The inputs the part's forward is captured with: features, and a mask where it takes one."""
    from i6_rc_jobs import Inputs, TensorSpec

    tensors: list[Any] = [("B", "T", DIM)] + ([TensorSpec(("B", "T"), "bool")] if masked else [])
    return Inputs.of(*tensors, T=(2, 300))


def _fingerprint(module_name: str, class_name: str, masked: bool) -> dict[str, Any]:
    """In a forked child (a fresh ``sys.modules`` past torch): the fingerprint a build of the part records, hashed
    by code and by computation (``by_content(..., computation=...)``: its hash, and the capture's own digest)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        status = 1
        try:
            from i6_rc_jobs._code_hash.record import recorded_code

            found = _part(module_name, class_name)
            assert found is not None
            libraries = ("returnn", "returnn_common", "torch", "numpy")  # i6_models hashed as the setup's code
            inputs = _computation_inputs(masked)
            recorded = recorded_code(module_name, class_name, (found[1],), {}, True, libraries, computation=inputs)
            fp, computed = recorded.fingerprint, recorded.computed
            assert computed is not None
            data = {
                "digest": fp.digest,
                "fingerprint": fp.to_json(),
                "computed": {
                    "digest": computed.digest or f"code {fp.digest}",  # refused: the code hash counts
                    "capture": computed.fingerprint.digest if computed.fingerprint else None,
                    "refused": computed.refused,
                    "by_code": computed.by_code,
                    "fingerprint": computed.fingerprint.to_json() if computed.fingerprint else None,
                },
            }
            with os.fdopen(write, "w") as f:
                json.dump(data, f)
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not text:
        raise RuntimeError(f"the fingerprint of {module_name}.{class_name} failed")
    return json.loads(text)


def version_main(source: str, out: str, previous: Optional[str]) -> None:
    """One version: for each part present, its fingerprint, and its judgement against ``previous``."""
    import torch

    sys.path.insert(0, source)
    results: dict[str, Any] = {}
    present = {}
    for module_name, class_name in PARTS:
        try:
            found = _part(module_name, class_name)
        except Exception as e:  # a part that no longer builds with this bench's config
            results[class_name] = {"error": f"{type(e).__name__}: {e}"}
            continue
        if found is not None:
            # Forked before this process computes anything: a child forked after torch ran an op may hang in
            # torch's thread pool (the build server, too, only imports torch before it forks).
            present[class_name] = (*found, _fingerprint(module_name, class_name, _takes_mask(found[0])))
    for name, (cls, cfg, entry) in present.items():
        torch.manual_seed(0)
        model = cls(cfg)
        x, mask = _inputs()
        state = {k: v.clone() for k, v in model.state_dict().items()}
        outputs = _outputs(model, x, mask)
        torch.save({"state": state, "outputs": outputs}, os.path.join(out, f"{name}.pt"))
        before_path = os.path.join(previous, f"{name}.pt") if previous else None
        if before_path and os.path.exists(before_path):
            before = torch.load(before_path)
            shapes = {k: tuple(v.shape) for k, v in state.items()}
            before_shapes = {k: tuple(v.shape) for k, v in before["state"].items()}
            if shapes != before_shapes:
                entry["same"], entry["why"] = False, "parameter names or shapes"
            else:
                model.load_state_dict(before["state"])
                diffs = {}
                for mode, output in _outputs(model, x, mask).items():
                    old = before["outputs"][mode]
                    diffs[mode] = float((output - old).abs().max()) if output.shape == old.shape else None
                differing = [mode for mode, d in diffs.items() if d is None or d > TOLERANCE]
                entry["same"], entry["max_abs_diff"] = not differing, diffs
                entry["why"] = ", ".join(f"output ({mode})" for mode in differing)
        results[name] = entry
    with open(os.path.join(out, "parts.json"), "w") as f:
        json.dump(results, f)


# -- the driver ---------------------------------------------------------------------------------------------------


def _instructions(code: types.CodeType) -> list[tuple[str, Any]]:
    """The bytecode as (operation, argument), without the NOPs a removed docstring leaves; a jump's target as the
    index of the instruction it lands on."""
    import dis

    kept = [i for i in dis.get_instructions(code) if i.opname != "NOP"]
    index = {i.offset: n for n, i in enumerate(kept)}
    offsets = sorted(index)

    def landing(offset: int) -> int:
        return index[next((o for o in offsets if o >= offset), offsets[-1])]

    return [
        (
            i.opname,
            (
                landing(i.argval)
                if i.opcode in dis.hasjrel + dis.hasjabs
                else None if i.opname == "LOAD_CONST" else i.argval
            ),
        )
        for i in kept
    ]


def _code_objects_equal(a: types.CodeType, b: types.CodeType) -> bool:
    fields = ("co_names", "co_varnames", "co_freevars", "co_cellvars", "co_argcount", "co_kwonlyargcount")
    if any(getattr(a, f) != getattr(b, f) for f in fields) or _instructions(a) != _instructions(b):
        return False
    consts_a = [c for c in a.co_consts if c is not None]  # a docstring removed leaves a None in its place
    consts_b = [c for c in b.co_consts if c is not None]
    if len(consts_a) != len(consts_b):
        return False
    for x, y in zip(consts_a, consts_b):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _code_objects_equal(x, y):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


def _edit_kind(before: dict[str, Any], after: dict[str, Any]) -> str:
    """How the modules two fingerprints hold differ: "none" (the same files, byte for byte), "cosmetic" (the same
    bytecode without docstrings: only comments, docstrings or formatting changed) or "code"."""
    if set(before["modules"]) != set(after["modules"]):
        return "code"
    kind = "none"
    for name, module in after["modules"].items():
        old = pathlib.Path(before["modules"][name]["file"]).read_bytes()
        new = pathlib.Path(module["file"]).read_bytes()
        if old == new:
            continue
        if not _code_objects_equal(compile(old, name, "exec", optimize=2), compile(new, name, "exec", optimize=2)):
            return "code"
        kind = "cosmetic"
    return kind


def _commits(repo: str) -> list[tuple[str, str, str]]:
    out = subprocess.run(
        ["git", "-C", repo, "log", "--reverse", "--format=%h %ad %s", "--date=short", "--", *TOUCHED],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [tuple(line.split(" ", 2)) for line in out.splitlines()]  # type: ignore[misc]


def _export(repo: str, commit: str, target: pathlib.Path) -> None:
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", repo, "archive", commit, "i6_models"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=str(REPO / ".deps" / "src" / "i6_models"))
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "code_hash.json"))
    args = parser.parse_args()
    started = time.time()
    commits = _commits(args.repo)
    rows = []
    with tempfile.TemporaryDirectory(prefix="code-hash-bench-") as tmp:
        previous: Optional[pathlib.Path] = None
        previous_parts: dict[str, Any] = {}
        for commit, date, subject in commits:
            source, out = pathlib.Path(tmp) / commit / "src", pathlib.Path(tmp) / commit / "out"
            _export(args.repo, commit, source)
            out.mkdir()
            paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": os.pathsep.join(paths)}
            call = [sys.executable, "-m", "bench.code_hash", "--version", str(source), str(out)]
            subprocess.run(call + ([str(previous / "out")] if previous else []), check=True, env=env, cwd=REPO)
            parts = json.loads((out / "parts.json").read_text())
            row = {"commit": commit, "date": date, "subject": subject, "parts": {}}
            for name, entry in parts.items():
                before = previous_parts.get(name)
                if "error" in entry or before is None or "error" in before:
                    row["parts"][name] = {"new": before is None, **{k: v for k, v in entry.items() if k == "error"}}
                    continue
                moved = entry["digest"] != before["digest"]
                changes = []
                if moved:
                    from i6_rc_jobs._code_hash.fingerprint import CodeFingerprint

                    old = CodeFingerprint.from_json(before["fingerprint"])
                    changes = [
                        line.replace(f"{source}{os.sep}", "").replace(f"{previous}{os.sep}src{os.sep}", "")
                        for line in old.changes(CodeFingerprint.from_json(entry["fingerprint"]))
                    ]
                ours, theirs = before["computed"], entry["computed"]
                row["parts"][name] = {
                    "computation_moved": ours["digest"] != theirs["digest"],
                    "capture_moved": (
                        None if None in (ours["capture"], theirs["capture"]) else ours["capture"] != theirs["capture"]
                    ),
                    "refused": theirs["refused"],
                    "by_code": sorted(theirs["by_code"]),
                    "computation_changes": _computation_changes(ours, theirs),
                    "edit": _edit_kind(before["fingerprint"], entry["fingerprint"]),
                    "same": entry["same"],
                    "why": entry["why"],
                    "max_abs_diff": entry.get("max_abs_diff"),
                    "moved": moved,
                    "changes": changes,
                }
            rows.append(row)
            previous, previous_parts = pathlib.Path(tmp) / commit, parts
    report(rows, time.time() - started, args.out)


def _computation_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The first lines of what two captures differ by (empty where either was refused or they are equal)."""
    from i6_rc_jobs import ComputationFingerprint

    if before["fingerprint"] is None or after["fingerprint"] is None:
        return []
    old, new = (ComputationFingerprint.from_json(side["fingerprint"]) for side in (before, after))
    return old.differences(new)[:6]


def computation_report(rows: list[dict[str, Any]]) -> list[str]:
    """The table of ``by_content(..., computation=...)``'s hash over the history, and its targets."""
    lines = [
        "| commit | parts | computing otherwise: hash moved | computing the same, code changed: hash kept (capture "
        "kept) | only comments, docstrings, formatting: hash moved | unchanged code: hash moved | refused |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    kept_changed = same_code = same_kept = over = refused = 0
    for row in rows:
        judged = {n: p for n, p in row["parts"].items() if "same" in p}
        changed = [n for n, p in judged.items() if not p["same"]]
        kept_changed += sum(not judged[n]["computation_moved"] for n in changed)
        same = {kind: [p for p in judged.values() if p["same"] and p["edit"] == kind] for kind in EDITS}
        same_code += len(same["code"])
        same_kept += sum(not p["computation_moved"] for p in same["code"])
        over += sum(p["computation_moved"] for p in same["cosmetic"] + same["none"])
        refused += sum(bool(p["refused"]) for p in judged.values())
        changed_text = ", ".join(f"{n}: {'yes' if judged[n]['computation_moved'] else 'NO'}" for n in changed) or "-"
        captures = sum(p["capture_moved"] is False for p in same["code"])
        lines.append(
            f"| {row['commit']} | {len(judged)} | {changed_text} | "
            f"{sum(not p['computation_moved'] for p in same['code'])} of {len(same['code'])} ({captures}) | "
            + " | ".join(
                f"{sum(p['computation_moved'] for p in same[kind])} of {len(same[kind])}" for kind in EDITS[1:]
            )
            + f" | {sum(bool(p['refused']) for p in judged.values())} |"
        )
    lines.append("")
    lines.append(
        f"computation hash, target 1, it moves for every part that computes otherwise: {kept_changed} kept "
        f"({'PASS' if not kept_changed else 'FAIL'})"
    )
    lines.append(
        f"computation hash, target 2, kept where the code changed and the part computes the same: {same_kept} of {same_code}"
    )
    lines.append(
        f"computation hash, no move for comments, docstrings, formatting or unchanged code: {over} moved "
        f"({'PASS' if not over else 'FAIL'}); refused captures: {refused}"
    )
    return lines


def report(rows: list[dict[str, Any]], seconds: float, out: str) -> None:
    lines = [
        "| commit | date | subject | parts | computing otherwise: hash moved | computing the same, code changed: hash "
        "moved | only comments, docstrings, formatting: hash moved | unchanged code: hash moved |",
        "|---|---|---|---:|---|---:|---:|---:|",
    ]
    missed = over = 0
    for row in rows:
        judged = {n: p for n, p in row["parts"].items() if "same" in p}
        changed = [n for n, p in judged.items() if not p["same"]]
        missed += sum(not judged[n]["moved"] for n in changed)
        same = {kind: [p for p in judged.values() if p["same"] and p["edit"] == kind] for kind in EDITS}
        over += sum(p["moved"] for p in same["cosmetic"] + same["none"])
        new = [n for n, p in row["parts"].items() if p.get("new")]
        changed_text = ", ".join(f"{n}: {'yes' if judged[n]['moved'] else 'NO'}" for n in changed) or "-"
        subject = row["subject"][:60] + (f" (new: {len(new)} parts)" if new and judged else "")
        lines.append(
            f"| {row['commit']} | {row['date']} | {subject} | {len(judged)} | {changed_text} | "
            + " | ".join(f"{sum(p['moved'] for p in same[kind])} of {len(same[kind])}" for kind in EDITS)
            + " |"
        )
    lines.append("")
    lines.append(
        f"target 1, the hash moves for every part that computes otherwise: {missed} kept "
        f"({'PASS' if not missed else 'FAIL'})"
    )
    lines.append(
        "target 2, no move for a part whose code changed only in comments, docstrings or formatting (or not at all): "
        f"{over} moved ({'PASS' if not over else 'FAIL'})"
    )
    lines += ["", *computation_report(rows)]
    lines.append(f"{len(rows)} commits, {seconds:.0f} s")
    print("\n".join(lines))
    for row in rows:
        for name, part in row["parts"].items():
            if part.get("moved"):
                print(f"{row['commit']} {name}: " + "; ".join(part["changes"]))
            if part.get("computation_moved") and part.get("same"):
                why = part["refused"] or "; ".join(
                    part["computation_changes"] + [f"by code: {n}" for n in part["by_code"]]
                )
                print(f"{row['commit']} {name}: computation hash moved, computing the same: {why}")
    pathlib.Path(out).parent.mkdir(parents=True, exist_ok=True)
    data = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "rows": rows}
    pathlib.Path(out).write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--version"]:
        version_main(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        main()
