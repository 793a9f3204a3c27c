"""A differential fuzzer of both hash schemes against RETURNN: random valid net dicts, pairs of them that differ by a
rewrite a graph rule claims inert or by a small edit, each pair built with RETURNN and judged; every pair whose hashes
are equal while RETURNN finds a difference is a counterexample. Run from the repository root:

    .venv/bin/python -m fuzz [--seed 1] [--pairs 200] [--processes 2] [--findings DIR] [--build-moved]

Properties: for ``hash_scheme="graph"``, equal graph hashes => RETURNN finds the two nets the same; for the dict scheme,
equal hashes => the written configs load as the same dicts and dims, and RETURNN finds them the same. "The same" is
``i6_rc_jobs._verify.semantics`` (TF variables and shapes, initializers, output and output dims on a fixed input, losses,
the data keys the network uses, with
``train_flag=False``) plus what that judge cannot see for training (:func:`fingerprints`): which variables are
trainable, the train-mode output and losses (dropout and other random ops with fixed seeds), the objective (loss
scales and options, L2) and its gradient with respect to every trainable variable.

A base net is valid if RETURNN constructs it (others are discarded and counted); a variant RETURNN rejects is discarded
and counted too, unless a hash kept: RETURNN building one net and refusing the other is a difference. Variants whose
both hashes moved are not built unless ``--build-moved`` (the property holds for them whatever RETURNN does). Each
counterexample is shrunk (layers and options dropped while it persists) and printed as a reproducer; with ``--findings
DIR`` each new kind is also written to ``DIR/<scheme>-<name>.md`` as soon as it is found. Prints per rule and per edit
kind how many pairs kept each hash and how many moved it, and each rule's coverage (pairs where the dict hash moved
while the graph hash stayed: the rule did the work)."""
