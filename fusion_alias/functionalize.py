"""Read substitution: rewrite reads of written memory to the values written.

After ``t1 = copy_(t0, a)`` the trace (traced with
``skip_inplace_alias_updates=True``) may go on reading ``a``, or a view of
``a`` made earlier, meaning "a's memory now". Inside one fusion region every
tensor is an SSA value, so such a read would see the stale input. Where the
new contents are known as a value, this pass rewrites the read to that value,
replaying view prims on it where the read is of a view. What it cannot
rewrite stays a read of memory, and the dependency graph puts a
read-after-write hazard on it.

Note [what can be substituted]
------------------------------
Per memory group we keep ``known``: view key → proxy holding that view's
current contents. A write ``copy_(v, d)`` resets it to ``{key(d): v}``: the
write changes d's elements, and, since d may overlap every other member of
its group, nothing else of the group is known any more. A read of ``p`` is
rewritten when ``key(p)`` is known, or when the root's key is known and
``p``'s view chain can be replayed on the root's value. Worked example
(seed program g)::

    b = shallow_copy(a)        # b is the same view as a
    t1 = copy_(exp(a), a)      # known = {a: t0}
    t2 = tanh(b)               # rewritten to tanh(t0)
    t3 = copy_(t2, b)          # known = {a: t2}   (b is the same view as a)
    mul(t1, t3)                # rewritten to mul(t2, t2): one region, no cut

With ``b = a[0, 0]`` instead (seed h), ``tanh(b)`` becomes
``tanh(squeeze(slice(t0)))`` but after ``copy_(t2, b)`` only ``b``'s elements
are known, so ``mul(t1, ...)`` must read ``a``'s memory: a hazard, a cut.

Only inputs of fusible compute ops and the source of ``copy_`` are rewritten.
View prims keep their memory argument (they name memory, they do not read
it), and ops that run outside regions read memory as eager PyTorch does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import TraceCtx, tracectx

from fusion_alias import ops
from fusion_alias.aliasing import AliasInfo, may_write, shape_reader, tensor_args, with_new_args


def substitute_reads(
    trace: TraceCtx,
    bsyms: Sequence[BoundSymbol],
    info: AliasInfo,
    is_fusible: Callable[[BoundSymbol], bool],
) -> list[BoundSymbol]:
    """Return ``bsyms`` with reads rewritten to known values (see module Note).

    New view prims (replays) are inserted right before the read that needs
    them; ``info`` is extended with their outputs.
    """
    known: dict[str, dict[tuple, TensorProxy]] = {}
    # value proxy's group → (group, key) entries that hold it, to drop them
    # when the value's own memory is written
    holders: dict[str, set[tuple[str, tuple]]] = {}
    out: list[BoundSymbol] = []

    def forget(group: str) -> None:
        known.pop(group, None)
        for g, k in holders.pop(group, ()):
            entry = known.get(g)
            if entry is not None:
                entry.pop(k, None)

    def remember(group: str, key: tuple, value: TensorProxy) -> None:
        known.setdefault(group, {})[key] = value
        holders.setdefault(info.group(value.name), set()).add((group, key))

    root, group_of = info.root, info.group

    def resolve(p: TensorProxy) -> TensorProxy:
        name = p.name
        if name not in root or not known:
            return p
        group = group_of(name)
        entry = known.get(group)
        if not entry:
            return p
        key = info.view_key[name]
        if key in entry:
            return entry[key]
        root_key = (info.root[p.name], ())
        base = entry.get(root_key)
        if base is None:
            return p
        value = base
        for step in info.chain[p.name]:
            with tracectx(trace):
                new_out = TensorProxy(like=step.output)
            replay = step.from_bsym(args=(value, *step.args[1:]), output=new_out, subsymbols=[])
            out.append(replay)
            info.add_alias(new_out.name, value.name, replay)
            value = new_out
        remember(group, key, value)
        return value

    def rewrite(x):
        """``x`` with its tensor proxies resolved; the very same object when none changes."""
        if isinstance(x, TensorProxy):
            return resolve(x)
        if isinstance(x, (tuple, list)):
            items = [rewrite(y) for y in x]
            if all(a is b for a, b in zip(items, x)):
                return x
            return type(x)(items)
        return x

    def rewrite_args(bsym: BoundSymbol, first_only: bool) -> BoundSymbol:
        """``bsym`` reading resolved values (all arguments, or only the first); itself when none changes."""
        args = bsym.args
        new_args = None  # a copy of args, made at the first change
        for i, a in enumerate(args[:1] if first_only else args):
            new = resolve(a) if isinstance(a, TensorProxy) else rewrite(a)  # (rewrite's first test, inlined)
            if new is not a:
                if new_args is None:
                    new_args = list(args)
                new_args[i] = new
        if new_args is None:
            return bsym
        return with_new_args(bsym, tuple(new_args))

    copy_id, update_aliases_id, view_addrs = ops.COPY_ID, ops.UPDATE_ALIASES_ID, ops._VIEW_ADDRS
    shape_of = shape_reader()
    for bsym in bsyms:
        sym_id = bsym.sym.id
        if sym_id is copy_id:
            new = rewrite_args(bsym, True)
            out.append(new)
            dst = bsym.args[1]
            group = group_of(dst.name)
            forget(group)
            src = new.args[0]
            # a broadcasting write (``b.copy_(s)`` with a 0-dim ``s``) leaves a value of dst's shape,
            # not ``s``: later reads keep reading the written buffer (fuzz seed 1 #1249)
            if isinstance(src, TensorProxy) and shape_of(src) == shape_of(dst):
                remember(group, info.view_key[dst.name], src)
            continue
        if id(sym_id) in view_addrs or sym_id is update_aliases_id:  # (ops.is_view, ops.is_update_aliases)
            out.append(bsym)
            continue
        if is_fusible(bsym):
            out.append(rewrite_args(bsym, False) if known else bsym)  # (nothing known: nothing to rewrite)
            continue
        out.append(bsym)
        if may_write(bsym):
            for a in tensor_args(bsym):
                forget(info.group(a.name))
    return out
