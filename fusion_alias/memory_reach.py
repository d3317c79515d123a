"""Written memory that eager's backward never reaches through memory: its unread write-back can be dropped.

Note [an unread write into memory another input shares, read by nothing the loss reaches]
-----------------------------------------------------------------------------------------
unreached_writebacks.py drops, per call, what Thunder's one backward computes from the zero cotangent of a
write-back the loss does not read (Note [a write-back the loss does not read]), but not for memory another input
of the call shares (Note [an unread write into memory another input shares]): there eager's graph also reaches the
write through *memory*. After a write, every later use of any view of that memory (an input that shares it, one
made before the write, a view returned) has its history remade through the write's node (``CopySlices``), so eager
visits the write, with zeros for the elements the use does not read, and ``0 * inf`` is eager's NaN too. The
functionalized program reads a disjoint view as the input it was (no data edge to the write), so only the zero
cotangent of the write-back gives Thunder that NaN: it must be kept there.

Where no use of the memory after its first write reaches the loss, eager never visits any write into it, and
the zero cotangent of its write-back is Thunder's alone (fuzz ``--special-values --grad`` 70102 #9, #10)::

    def f(a, b):                        # a, b: one tensor x (x = leaf * 1, x holding inf and nan)
        t0 = a.cumsum(-2)               # read before any write: its history is a's, as it was
        b[0] = b.roll(1)[3]             # first write into x
        a.copy_(a.cumprod(1))           # read after it, but only into x's own final value
        return t0                       # eager: leaf.grad from cumsum only; was NaN (cumprod_vjp(x, 0))

    def g(a, b):                        # a = x, b = x[:, 1]
        t0 = b * 2
        a.add_(a.norm(dim=0, keepdim=True))
        return t0                       # eager: 2 at column 1, else 0; was NaN (norm_vjp of zeros)

Every input is taken as one memory here. (Which inputs share a storage is part of a cache entry's key in calls with
gradients since session 44, guard.py's Note [inputs that share a storage, in a call with gradients]; before, two views
of one tensor that do not overlap reused the program compiled for two tensors. Taking all inputs as one stays the
conservative reading: it keeps Thunder's backward wherever a write may be reached through memory.) ``dropped_with`` reads the
program, flattened, in order: from the first write into an input, every op that reads an input (any name made as
a view of one, or written into one) and every op that reads what such an op computed is *after*; a write of such
a value into memory the program made makes that memory read after too. The writes are unvisited through memory
when nothing after is a program output, nor an output a view of input memory or of memory read after. Reads
under no_grad count as reads (conservative: the backward stays Thunder's). Then unreached_writebacks.py watches
the write-backs as one: all of them unreached, or Thunder's backward as it is.
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy

from fusion_alias import ops

_INPUTS = object()  # (the memory of every input, module Note)


def _names(bsym, which) -> list[str]:
    return [p.name for p in getattr(bsym, which) if isinstance(p, TensorProxy)]


def dropped_with(flat, outs, info, inputs, written) -> tuple:
    """Per written input (``written``: the root proxies whose final values the call writes back, in order),
    None where the unread write-backs must stay Thunder's (module Note), else the positions in ``written`` of
    every write-back (watched as one). ``flat``: the program's ops in order, without its return; ``outs``: its
    outputs; ``info``: its ``AliasInfo``; ``inputs``: its tensor inputs."""
    input_names = {p.name for p in inputs}
    input_groups = {info.group(p.name) for p in inputs if p.name in info.root}

    def memory(name):  # (a name that may share an input's memory is one of it)
        if name not in info.root:
            return None
        group = info.group(name)
        return _INPUTS if info.root[name] in input_names or group in input_groups else group

    first = next((i for i, b in enumerate(flat) if ops.is_copy(b) and isinstance(b.args[1], TensorProxy)
                  and memory(b.args[1].name) is _INPUTS), None)
    if first is None or not written:
        return tuple(None for _ in written)
    after_names: set = set()
    after_memory = {_INPUTS}
    for b in flat[first:]:
        if ops.is_copy(b):
            src, dst = b.args[0], b.args[1]
            if isinstance(src, TensorProxy) and (src.name in after_names or memory(src.name) in after_memory):
                after_memory.add(memory(dst.name) if isinstance(dst, TensorProxy) else None)
            continue  # (its result is a name of the destination's memory)
        if any(n in after_names or memory(n) in after_memory for n in _names(b, "flat_args")):
            after_names.update(_names(b, "flat_outs"))
    if None in after_memory or any(o.name in after_names or memory(o.name) in after_memory or memory(o.name) is None
                                   for o in outs if isinstance(o, TensorProxy)):
        return tuple(None for _ in written)
    every = frozenset(range(len(written)))
    return tuple(every for _ in written)
