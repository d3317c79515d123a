"""Which tensor names' memory the program may write (``layouts.copying_reshapes`` asks, to leave a layout
it cannot know undecided where nothing is written)."""

from __future__ import annotations

from thunder.core.proxies import TensorProxy

from fusion_alias import ops
from fusion_alias.aliasing import may_write, output_may_alias


def written_memory(trace, flat: list):
    """A predicate: may the memory of this tensor name be written by the program?

    Note [an unknown layout matters only where memory is written]: whether a reshape
    is a view or a copy shows only if its input's or its output's memory is written
    (before or after). Tensors are grouped by everything that may share memory: view
    ops, ``copy_`` (its result is the destination), opaque ops whose output may alias
    an argument, and all trace inputs together (they may alias each other). Example:
    in a BatchNorm training step only the running-stats buffers are written, so a
    reshape of a gradient made by an opaque backward op can stay undecided::

        copy_(new_mean, running_mean)      # written: {running_mean, inputs...}
        t79 = batch_norm_backward(...)     # fresh, opaque: its own group
        t80 = reshape(t79, (1, 8))         # layout unknown, but nothing in its group is written
    """
    parent: dict[str, str] = {}

    def find(n: str) -> str:
        root = n
        while parent.get(root, root) != root:
            root = parent[root]
        while n != root:
            parent[n], n = root, parent.get(n, n)
        return root

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    inputs = [a.name for a in trace.args if isinstance(a, TensorProxy)]
    for name in inputs[1:]:
        union(inputs[0], name)
    written: list[str] = []
    for b in flat:
        args = [a.name for a in b.flat_args if isinstance(a, TensorProxy)]
        outs = [o.name for o in b.flat_outs if isinstance(o, TensorProxy)]
        if ops.is_copy(b):
            dst = b.args[1].name
            written.append(dst)
            for o in outs:
                union(o, dst)
            continue
        opaque = ops.op_info(b) is None
        if opaque and may_write(b):
            written.extend(args)
        if args and (ops.is_view(b) or opaque and any(output_may_alias(b, o) for o in outs)):
            for n in args[1:] + outs:
                union(args[0], n)
    written_roots = {find(n) for n in written}
    return lambda name: find(name) in written_roots
