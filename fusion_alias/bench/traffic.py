"""Memory traffic of a partition: bytes each region reads and writes, summed (issue 11).

The model is the one a fused kernel pays for: a region reads each of its tensor
inputs once and writes each of its outputs and each write-back once; what stays
inside a region costs nothing. So

* ``regions_traffic`` sums, over regions, the bytes of the region's inputs, its
  outputs and its write-back destinations;
* ``lower_bound`` is what any partition must move: each program input memory read
  once (as much of it as the program reads; the same tensor passed twice, once),
  each returned tensor that is not an input written once, and each written
  destination written once (its own bytes: a write into two rows of a cache
  costs two rows, not the cache).

Note [what counts as a write-back]: a region writes memory once per distinct
destination name, with the final value (``region_plan.plan_region`` coalesces two
writes of one view). For fusion_alias the destinations are the region's
``writebacks``; for Thunder's groups, the distinct ``copy_`` destinations of the
group, since Thunder's nvFuser executor writes each ``copy_`` it is given.

Worked example, ``a.add_(1); return a * 2`` on a 1024-float ``a``: one region
reads ``a`` (4 KiB), writes the output (4 KiB) and writes ``a`` back (4 KiB):
12 KiB, equal to the lower bound. Cut into two regions, the written value
would be written back by the first and read again by the second: 16 KiB.
"""

from __future__ import annotations

from thunder.core.dtypes import to_torch_dtype
from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_flatten

from fusion_alias import ops
from fusion_alias.aliasing import proxy_args, proxy_outs


def nbytes(p) -> int:
    if not isinstance(p, TensorProxy):
        return 0
    n = 1
    for s in p.shape:
        n *= int(s)
    return n * to_torch_dtype(p.dtype).itemsize


def returned(bsyms) -> list:
    """The tensors a trace's (or flattened trace's) ``return`` hands back."""
    ret = bsyms[-1] if bsyms else None
    if ret is None or ret.sym.id is not ops.PrimIDs.RETURN:
        return []
    return [p for p in tree_flatten(ret.args)[0] if isinstance(p, TensorProxy)]


def _names_read(bsyms) -> set[str]:
    """Names the symbols read: every tensor argument, except a ``copy_`` destination (written, not read)."""
    return set(_users(bsyms))


def _users(bsyms) -> dict[str, list]:
    """name -> the symbols that read it (a ``copy_`` destination is written, not read)."""
    users: dict[str, list] = {}
    for b in bsyms:
        args = proxy_args(b)
        if ops.is_copy(b):
            args = [a for a in args if a is not b.args[1]]
        for a in args:
            if isinstance(a, TensorProxy):
                users.setdefault(a.name, []).append(b)
    return users


def _bytes_through_views(users: dict, name: str, p) -> int:
    """Bytes a region reads of its input ``name``: all of it, or, where the region only takes views
    of it (``a[0, 0]``), the bytes of the views its other symbols read (a kernel loads those only)."""

    def through(n: str, q) -> int:
        total = 0
        for b in users.get(n, ()):
            if not ops.is_view(b) or not isinstance(b.output, TensorProxy):
                return nbytes(q)
            total += through(b.output.name, b.output)
        return total

    return min(nbytes(p), through(name, p))


def fusion_alias_traffic(trace) -> int:
    """Bytes moved by the fusion regions of fusion_alias's final ``trace`` (``thunder.last_traces(f)[-1]``).

    A region output that is a view of one of its inputs (``output_kind`` "view": the wrapper
    replays it on the input, nvFuser writes nothing) costs nothing; reading such a view in a later
    region costs the smaller of the view and its base (an ``expand``ed ``q`` reads ``q``).
    """
    total = 0
    view_base_bytes: dict[str, int] = {}
    written_bases: set[str] = set()
    for b in trace.bound_symbols:
        if not b.sym.is_fusion:
            continue
        spec = getattr(b._call_ctx[b.sym.name], "spec", None)
        kinds = spec.output_kind if spec is not None else {}
        # (a later Thunder pass may rename the fusion's arguments: the spec's inputs match them by position)
        names = [p.name for p in spec.inputs] if spec is not None else [getattr(p, "name", None) for p in b.args]
        body = spec.bsyms if spec is not None else b.subsymbols
        users = _users(body)
        read = users.keys()
        total += sum(
            min(nbytes(p), view_base_bytes.get(p.name, nbytes(p)), _bytes_through_views(users, name, p))
            for p, name in zip(b.args, names) if isinstance(p, TensorProxy) and name in read
        )
        for o in b.flat_outs:
            if not isinstance(o, TensorProxy):
                continue
            if kinds.get(o.name) == "view":
                base = spec.view_chain[o.name][0]
                base_p = next((p for p in b.args if isinstance(p, TensorProxy) and p.name == base), None)
                if base_p is None:  # a view of a value the region makes: that base is written (once)
                    base_p = next((p for p in spec.extra_outputs if p.name == base), o)
                    if base not in written_bases:
                        written_bases.add(base)
                        total += nbytes(base_p)
                view_base_bytes[o.name] = nbytes(base_p)
                continue
            total += nbytes(o)
        if spec is not None:
            total += sum(nbytes(spec.bsyms[i].args[1]) for i in spec.writebacks)
    return total


def groups_traffic(bsyms: list, groups: list[list], returned_names: set) -> int:
    """Bytes moved by ``groups`` (lists of the flattened ``bsyms``, Thunder's fusion groups).

    A group's inputs: tensors it reads and does not make; outputs: tensors it makes that a symbol
    outside it reads, or the program returns; write-backs: its distinct ``copy_`` destinations.
    """
    group_of = {}
    for gi, grp in enumerate(groups):
        for b in grp:
            group_of[id(b)] = gi
    read_outside: dict[str, set] = {}
    for b in bsyms:
        gi = group_of.get(id(b))
        for a in proxy_args(b):
            if isinstance(a, TensorProxy):
                read_outside.setdefault(a.name, set()).add(gi)
    total = 0
    for gi, grp in enumerate(groups):
        made = {o.name: o for b in grp for o in proxy_outs(b) if isinstance(o, TensorProxy)}
        names_read = _names_read(grp)
        read = {
            a.name: a for b in grp for a in proxy_args(b)
            if isinstance(a, TensorProxy) and a.name not in made and a.name in names_read
        }
        dsts = {b.args[1].name: b.args[1] for b in grp if ops.is_copy(b) and isinstance(b.args[1], TensorProxy)}
        outs = [
            o for name, o in made.items()
            if name in returned_names or (read_outside.get(name, set()) - {gi})
        ]
        copy_results = {b.output.name for b in grp if ops.is_copy(b) and isinstance(b.output, TensorProxy)}
        total += sum(nbytes(p) for p in read.values())
        total += sum(nbytes(o) for o in outs if o.name not in copy_results)  # a copy_ result is the write-back
        total += sum(nbytes(p) for p in dsts.values())
    return total


def lower_bound(prepared) -> int:
    """Each program input read once, each returned tensor that is not an input's memory written once,
    each distinct written destination (by memory and view) written once (module docstring)."""
    info = prepared.info
    inputs = [p for p in prepared.tensor_inputs]
    input_names = {p.name for p in inputs}
    # each input memory read once: the most of it any symbol reads (a view reads its own bytes,
    # an expanded view no more than its root), nothing for an input only written into
    read_names = _names_read(prepared.bsyms)
    by_name = {p.name: p for b in prepared.bsyms for p in proxy_args(b) if isinstance(p, TensorProxy)}
    read_of_root: dict[str, int] = {}
    for name in read_names:
        r = info.root.get(name)
        if r in input_names:
            read_of_root[r] = max(read_of_root.get(r, 0), nbytes(by_name[name]))
    size = {p.name: nbytes(p) for p in inputs}
    total = sum(min(size[r], n) for r, n in read_of_root.items())
    written: dict = {}
    for b in prepared.bsyms:
        if ops.is_copy(b) and isinstance(b.args[1], TensorProxy):
            dst = b.args[1]
            if info.root.get(dst.name) in input_names:
                written.setdefault(info.view_key.get(dst.name, dst.name), dst)
    total += sum(nbytes(p) for p in written.values())
    seen = set()
    for p in returned(prepared.bsyms):
        if p.name in seen:
            continue
        seen.add(p.name)
        if info.root.get(p.name) in input_names and info.root.get(p.name) is not None:
            continue  # an input's memory: its write-back (if written) is counted above
        total += nbytes(p)
    return total
