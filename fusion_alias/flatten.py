"""Flattening: the trace down to the symbols fusion_alias claims, and which of them it may fuse."""

from __future__ import annotations

from collections.abc import Callable

from thunder.core.proxies import TensorProxy, variableify
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import TraceCtx
import thunder.core.prims as prims

from fusion_alias import context, ops
from fusion_alias.aliasing import _prim_implemented_by, forget_flattened, proxy_outs
from fusion_alias.view_rewrites import as_view_prim


def flatten_trace(executor, trace: TraceCtx) -> tuple[list[BoundSymbol], dict]:
    """The trace's symbols, each down to the symbols ``executor`` claims (``executor._flatten``),
    and the verdicts recorded on the way: id -> (bsym, fusible)."""
    forget_flattened()
    verdicts: dict[int, tuple] = {}  # id -> (bsym, fusible), for this pass: the checker is not free
    flat: list[BoundSymbol] = []
    flatten_into = executor._flatten_into
    cuda_only = context.current().backend == "nvfuser"  # (asked once: Note [claims without a list], executor.py)
    copy_id = ops.COPY_ID
    for b in trace.bound_symbols:
        if not flatten_into(b, verdicts, flat, cuda_only):  # (executor._flatten, appending to flat)
            view = as_view_prim(b)  # Note [narrow is a slice] (view_rewrites.py)
            if view is not None:
                if not flatten_into(view, verdicts, flat, cuda_only):
                    flat.append(view)
                continue
            if (b.sym.name == "copy_" and b.sym.id is not copy_id and not b.subsymbols
                    and _prim_implemented_by(b.sym.name) is copy_id):
                b = prims.copy_.bind(*b.args, **b.kwargs, output=b.output)  # Note [a copy_ another executor claimed]
            flat.append(b)
    return flat, verdicts


def split_input_bindings(flat: list[BoundSymbol]) -> tuple[list[BoundSymbol], list[BoundSymbol]]:
    """``(the leading unpack_trivial symbols, the rest)`` of a flattened trace.

    Note [inputs bound before the pass]
    -----------------------------------
    A computation trace starts by binding each argument (``x = unpack_trivial(x, name='x')``),
    one symbol per input: 40k of the bench's 100k-symbol ``wide`` trace (an update of 20k
    parameters from 20k gradients). Each binding makes a trace input, which every stage
    already knows as a root of memory (``aliasing.analyze`` takes the inputs first), reads
    nothing, writes nothing and joins no region; yet every stage walked it (analysis, read
    substitution, DCE, graph, partition, region assembly). They are set aside before the
    stages and put back first in the pass's new trace, where they were.
    """
    unpack = ops.PrimIDs.UNPACK_TRIVIAL
    n = 0
    while n < len(flat) and flat[n].sym.id is unpack:
        n += 1
    return flat[:n], flat[n:]


# Note [a copy_ another executor claimed]
# ---------------------------------------
# Thunder gives each symbol to the first executor of the list that takes it before the fusion
# pass runs; a ``prims.copy_`` fusion_alias does not claim (an int8 destination:
# ``executor._fusible_result_dtype``) reaches the pass as the torch executor's ``copy_``, a leaf
# with its own symbol, which the analysis did not read as a write. The read of ``c`` after
# ``c.copy_(s)`` then had no hazard edge, and the partition placed it before the write::
#
#     c.copy_(torch.tensor(-1)); return c * 1     # int8 c: eager [-1, ...], fusion_alias [0, ...]
#
# (fuzz seed 19917 #21). Such a symbol is the prim again for the pass: the write every stage knows.
# It stays outside regions (the executor does not claim it), and after the pass Thunder's
# "always" executors claim it back (``transform_for_execution``, step 3).


def _drop_update_aliases(bsyms: list[BoundSymbol]) -> tuple[list[BoundSymbol], list[list[str]], dict]:
    """Remove ``update_aliases`` (identity at run time), renaming its outputs to its inputs.

    Its argument tuple is Thunder's view group: kept as an alias fact. Also returns
    the renaming (variableified output -> input proxy).

    A self-copy ``copy_(x, x)`` (``x.copy_(x)``) goes too, its result renamed to ``x``:
    eager writes nothing there, even into an ``expand()``ed ``x`` whose elements overlap,
    where a write-back would fail (fuzz seed 1 #680).
    """
    swap: dict = {}
    facts: list[list[str]] = []
    out = []
    update_aliases_id, copy_id = ops.UPDATE_ALIASES_ID, ops.COPY_ID
    for b in bsyms:
        if swap:
            b = b.from_bsym_swap_proxies(swap, skip_output=True)
        sym_id = b.sym.id
        if sym_id is not update_aliases_id and sym_id is not copy_id:
            out.append(b)  # (neither of the two below)
            continue
        if sym_id is update_aliases_id:  # (ops.is_update_aliases)
            ins = [x for x in b.args[0]]
            facts.append([x.name for x in ins if isinstance(x, TensorProxy)])
            for o, i in zip(proxy_outs(b), ins):
                swap[variableify(o)] = i
            continue
        if isinstance(b.args[1], TensorProxy) and getattr(b.args[0], "name", None) == b.args[1]._name:  # a copy_
            swap[variableify(b.output)] = b.args[1]
            continue
        out.append(b)
    return out, facts, swap


def fusible_predicate(executor, verdicts: dict, tensor_inputs) -> Callable[[BoundSymbol], bool]:
    """Whether a symbol may join a region: ``executor.is_fusible``, looked up in ``verdicts`` first."""

    def fusible(b: BoundSymbol) -> bool:
        entry = verdicts.get(id(b))
        if entry is None or entry[0] is not b:  # (the bsym is kept: its id stays its own)
            entry = verdicts[id(b)] = (b, executor.is_fusible(b))
        return entry[1]

    def inherit(new: BoundSymbol, old: BoundSymbol) -> None:
        """``new``'s verdict is ``old``'s, when known and the executor says so (executor.py,
        Note [a rewritten symbol claimed as the one it rewrites]); else it is asked when needed."""
        entry = verdicts.get(id(old))
        if entry is not None and entry[0] is old and executor.claims_alike(new, old):
            verdicts[id(new)] = (new, entry[1])

    if any(p.requires_grad for p in tensor_inputs):
        # Note [writes stay visible to autograd's split]: Thunder's
        # split_into_forward_and_backward keeps a forward bsym only if its outputs
        # are needed, or if it is named copy_. A fusion that only writes back would
        # be moved to the backward and lost, so with grad inputs the copy_ prims
        # stay outside regions (Thunder's torch executor runs them).
        fusible_any = fusible
        fusible = lambda b: fusible_any(b) and not ops.is_copy(b)  # noqa: E731
    fusible.inherit = inherit  # (read substitution's rewritten symbols: functionalize._inherit)
    return fusible
