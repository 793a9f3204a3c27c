"""What a torch model computes, as a hash: its forward captured as a graph (``torch.export``), in eval and in train
mode, over the shapes it is told to take, normalized so that a refactor that computes the same keeps the digest,
plus its initial parameters under a fixed seed. Deny by default: where the capture cannot be proven complete, no
fingerprint is made, and the one-line reason says why (see docs/guide/computation-hash.md)."""
