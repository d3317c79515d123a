"""Unit tests of alias analysis, hazard edges and the partitioner on hand-built traces."""

import pytest
import torch
import thunder.core.devices as devices
import thunder.core.dtypes as dtypes
import thunder.core.prims as prims
from thunder.core.proxies import TensorProxy
from thunder.core.trace import TraceCtx, tracectx

from fusion_alias.aliasing import analyze
from fusion_alias.executor import executor
from fusion_alias.functionalize import substitute_reads
from fusion_alias.graph import build_graph
from fusion_alias.partition import partition


def make_trace(body, *shapes):
    """Trace ``body`` (calling prims on proxies a, b, ...) into a TraceCtx."""
    trc = TraceCtx()
    with tracectx(trc):
        args = [
            TensorProxy(name, shape=shape, dtype=dtypes.float32, device=devices.cpu)
            for name, shape in zip("abcd", shapes)
        ]
        trc.args = args
        body(*args)
    return trc


def pipeline(trc, input_groups=()):
    fusible = executor.is_fusible
    info = analyze(trc.bound_symbols, trc.args, input_groups)
    bsyms = substitute_reads(trc, trc.bound_symbols, info, fusible)
    graph = build_graph(bsyms, info, fusible)
    part = partition(bsyms, graph, fusible)
    return info, bsyms, graph, part


def edge_kinds(graph):
    return {(u, v): (frozenset(d["kinds"]), d["unsafe"]) for u, v, d in graph.edges(data=True)}


# -- alias analysis ----------------------------------------------------------


def test_views_and_copy_results_share_family():
    def body(a):
        s = prims.slice_prim(a, [0, 0], [1, 1], [1, 1])
        b = prims.squeeze(s, (0, 1))
        t = prims.tanh(b)
        prims.copy_(t, b, grad_enabled=True)

    trc = make_trace(body, (5, 5))
    info = analyze(trc.bound_symbols, trc.args)
    names = [o.name for bs in trc.bound_symbols for o in bs.flat_outs]
    s, b, t, c = names
    assert info.root[s] == info.root[b] == info.root[c] == "a"
    assert info.group(c) == info.group("a")
    assert info.same_view(b, c) and not info.same_view(b, "a")
    assert info.root[t] == t and info.group(t) != info.group("a")
    assert info.is_whole("a") and not info.is_whole(b)


def test_input_groups_join_families():
    def body(a, b):
        prims.copy_(prims.exp(a), a, grad_enabled=True)

    trc = make_trace(body, (5, 5), ())
    assert analyze(trc.bound_symbols, trc.args, [["a", "b"]]).group("b") == analyze(
        trc.bound_symbols, trc.args, [["a", "b"]]
    ).group("a")
    info = analyze(trc.bound_symbols, trc.args)
    assert info.group("b") != info.group("a")


def test_shallow_copy_is_the_same_view():
    def body(a):
        prims.shallow_copy(a)

    trc = make_trace(body, (5, 5))
    info = analyze(trc.bound_symbols, trc.args)
    out = trc.bound_symbols[0].output.name
    assert info.same_view(out, "a") and info.is_whole(out)


# -- hazard edges --------------------------------------------------------------


def test_raw_war_waw_edges_between_aliased_inputs():
    def body(a, b):
        t0 = prims.exp(a)  # 0: read a
        prims.copy_(t0, a, grad_enabled=True)  # 1: write a
        t2 = prims.tanh(b)  # 2: read b (overlaps a) after the write: raw
        prims.copy_(t2, b, grad_enabled=True)  # 3: write b: waw with 1

    trc = make_trace(body, (5, 5), ())
    info, bsyms, graph, part = pipeline(trc, [["a", "b"]])
    kinds = edge_kinds(graph)
    assert kinds[(0, 1)] == (frozenset({"data", "war"}), False)  # exp(a) -> copy_(., a): safe
    assert kinds[(1, 2)] == (frozenset({"raw"}), True)
    assert kinds[(1, 3)][0] >= {"waw"} and kinds[(1, 3)][1] is True
    assert len(part.regions) == 2


def test_independent_read_before_write_is_unsafe_war():
    def body(a):
        s = prims.sum(a, (0, 1))  # 0: a reduction reads a
        t = prims.exp(a)  # 1
        prims.copy_(t, a, grad_enabled=True)  # 2: write a, not fed by the reduction

    trc = make_trace(body, (5, 5))
    info, bsyms, graph, part = pipeline(trc)
    kinds = edge_kinds(graph)
    assert kinds[(0, 2)] == (frozenset({"war"}), True)
    assert kinds[(1, 2)] == (frozenset({"data", "war"}), False)
    assert part.stage[0] < part.stage[2]


def test_covering_writes_coalesce():
    def body(a):
        t0 = prims.exp(a)
        t1 = prims.copy_(t0, a, grad_enabled=True)
        t2 = prims.add(t1, 1.0)  # reads the copy_ result: substituted to t0
        prims.copy_(t2, a, grad_enabled=True)

    trc = make_trace(body, (4,))
    info, bsyms, graph, part = pipeline(trc)
    assert bsyms[2].args[0].name == bsyms[0].output.name  # read substituted
    assert graph.edges[1, 3]["unsafe"] is False  # waw to the same view: coalesced
    assert len(part.regions) == 1


def test_partial_write_then_whole_read_is_cut():
    def body(a):
        s = prims.slice_prim(a, [0], [2], [1])  # 0 (names memory: stays outside regions)
        t = prims.neg(s)  # 1
        prims.copy_(t, s, grad_enabled=True)  # 2 writes a[0:2]
        prims.mul(a, 2.0)  # 3 reads all of a: must see the write

    trc = make_trace(body, (4,))
    info, bsyms, graph, part = pipeline(trc)
    assert graph.edges[2, 3]["unsafe"] is True
    assert part.stage[3] > part.stage[2]
    kinds = [k for k, _ in part.items]
    assert kinds[0] == "node"  # the slice naming the destination runs on torch first


# -- substitution ----------------------------------------------------------------


def test_view_of_written_root_is_replayed():
    def body(a):
        s = prims.slice_prim(a, [0], [2], [1])  # view made before the write
        t0 = prims.exp(a)
        prims.copy_(t0, a, grad_enabled=True)
        prims.neg(s)  # reads a[0:2] after the write

    trc = make_trace(body, (4,))
    info, bsyms, graph, part = pipeline(trc)
    # functionalize's Note [a view of a value is computed from the view of its operands]: neg reads
    # exp of a[0:2], computed right after exp(a), before the write, from a's old contents
    neg = bsyms[-1]
    pushed = next(b for b in bsyms if b.output is not None and getattr(b.output, "name", None) == neg.args[0].name)
    assert pushed.sym.id is prims.PrimIDs.EXP
    view = next(b for b in bsyms if b.output is not None and getattr(b.output, "name", None) == pushed.args[0].name)
    assert view.sym.id is prims.PrimIDs.SLICE and view.args[0].name == "a"
    names = [getattr(b.output, "name", None) for b in bsyms]
    write = next(i for i, b in enumerate(bsyms) if b.sym.id is prims.PrimIDs.COPY_)
    assert names.index(pushed.output.name) < write
    # a region reads a[0:2], the next writes a (graph's Note [elements moved from written memory])
    assert len(part.regions) == 2


def test_write_through_other_alias_blocks_substitution():
    def body(a, b):
        t0 = prims.exp(a)
        prims.copy_(t0, a, grad_enabled=True)
        prims.copy_(prims.tanh(b), b, grad_enabled=True)  # b overlaps a
        prims.sin(a)  # cannot be rewritten to t0: b's write changed a

    trc = make_trace(body, (5, 5), ())
    info, bsyms, graph, part = pipeline(trc, [["a", "b"]])
    assert bsyms[-1].args[0].name == "a"
    assert len(part.regions) == 3


def test_ignore_hazards_puts_everything_in_one_region():
    def body(a, b):
        prims.copy_(prims.exp(a), a, grad_enabled=True)
        prims.copy_(prims.tanh(b), b, grad_enabled=True)
        prims.sin(a)

    trc = make_trace(body, (5, 5), ())
    fusible = executor.is_fusible
    info = analyze(trc.bound_symbols, trc.args, [["a", "b"]])
    bsyms = substitute_reads(trc, trc.bound_symbols, info, fusible)
    graph = build_graph(bsyms, info, fusible)
    assert len(partition(bsyms, graph, fusible, ignore_hazards=True).regions) == 1


def test_non_overlapping_and_dense_agrees_with_torch():
    """Our check (used by the partial-overlap rule) against torch's private one, where it still exists."""
    prims_common = pytest.importorskip("torch._prims_common")
    ref = getattr(prims_common, "is_non_overlapping_and_dense", None)
    if ref is None:
        pytest.skip("torch._prims_common.is_non_overlapping_and_dense is gone in this torch")
    from fusion_alias.refusals.operands import _non_overlapping_and_dense

    gen = torch.Generator().manual_seed(0)
    buf = torch.empty(4096)
    for _ in range(2000):
        rank = int(torch.randint(0, 4, (), generator=gen))
        shape = [int(n) for n in torch.randint(1, 5, (rank,), generator=gen)]
        stride = [int(s) for s in torch.randint(0, 30, (rank,), generator=gen)]
        t = buf.as_strided(shape, stride)
        assert _non_overlapping_and_dense(t) == ref(t), (shape, stride)


def test_fusion_symbol_equals_thunders_own():
    """A fusion symbol copied from the executor's model (executor.py, Note [fusion symbols copied
    from one]) has every field a ``Symbol(...)`` made by Thunder has, and stays its own."""
    import dataclasses

    from thunder.core.symbol import Symbol

    from fusion_alias.executor import _KEEP_TAGS

    for tags in ((), _KEEP_TAGS):
        made = executor._fusion_symbol("FusionAlias7", tags)
        expected = Symbol("FusionAlias7", meta=None, is_fusion=True, executor=executor, tags=tags)
        assert type(made) is Symbol
        for f in dataclasses.fields(Symbol):
            assert getattr(made, f.name) is getattr(expected, f.name) or getattr(made, f.name) == getattr(expected, f.name), f.name
        assert made == expected and hash(made) == hash(expected)
    assert executor._fusion_symbol("FusionAlias8", ()) is not executor._fusion_symbol("FusionAlias8", ())


def test_placed_symbols_keep_the_order_list_insertions_gave():
    # Note [symbols placed beside their producer, not inserted] (functionalize.py): the lists beside
    # each symbol lay out as inserting into one list did (before: at the symbol's index; after: at
    # the index right after it), for random sequences of appends and placements
    import random
    from types import SimpleNamespace
    from fusion_alias.functionalize import _Placed

    for seed in range(200):
        rng = random.Random(seed)
        out, model = [], []
        placed = _Placed(out)
        made = []
        for step in range(rng.randint(1, 40)):
            b = SimpleNamespace(output=None, step=step)
            op = rng.choice(["append", "before", "after"]) if made else "append"
            if op == "append":
                out.append(b)
                model.append(b)
            elif op == "before":
                anchor = rng.choice(made)
                extra = SimpleNamespace(output=None, step=(step, "second"))
                placed.before(anchor, [b, extra])
                at = model.index(anchor)
                model[at:at] = [b, extra]
                made.append(extra)
            else:
                anchor = rng.choice(made)
                placed.after(anchor, b)
                model.insert(model.index(anchor) + 1, b)
            made.append(b)
        assert placed.in_order() == model, seed


def test_a_proxy_like_another_is_what_the_constructor_makes():
    # Note [a proxy copied from the one it is like] (new_values.py): every field but the name is
    # what TensorProxy(like=...) gives, for several dtypes, ranks, grads and tags; names are new
    from thunder.core import devices, dtypes
    from thunder.core.proxies import TensorProxy
    from thunder.core.trace import TraceCtx, tracectx
    from fusion_alias import new_values

    assert new_values.copy_matches_constructor()
    trace = TraceCtx()
    with tracectx(trace):
        likes = [
            TensorProxy(shape=shape, device=devices.cpu, dtype=dtype, requires_grad=grad, tags=tags)
            for shape in ((), (1,), (4, 0), (2, 3, 5))
            for dtype in (dtypes.float32, dtypes.bfloat16, dtypes.int32, dtypes.bool8, dtypes.complex64)
            for grad in (False, True)
            for tags in (None, {"tag"})
        ]
    names = set()
    for like in likes:
        with tracectx(trace):
            expected = vars(TensorProxy(like=like))
        made = new_values.tensor_like(trace, like)
        assert type(made) is TensorProxy
        got = vars(made)
        assert got.keys() == expected.keys()
        assert {k: v for k, v in got.items() if k != "_name"} == {k: v for k, v in expected.items() if k != "_name"}
        assert trace.has_name(made.name) and made.name not in names and made.name != like.name
        names.add(made.name)
        assert made.tags is not like.tags


def test_a_replayed_symbol_is_what_from_bsym_makes():
    # new_args.replayed: the fields from_bsym(args=, output=, subsymbols=[]) gives, for a view prim
    import dataclasses
    import thunder.core.prims as prims
    from thunder.core import devices, dtypes
    from thunder.core.proxies import TensorProxy
    from thunder.core.trace import TraceCtx, tracectx
    from fusion_alias.new_args import replayed

    trace = TraceCtx()
    with tracectx(trace):
        a = TensorProxy(shape=(4, 3), device=devices.cpu, dtype=dtypes.float32)
        b = TensorProxy(shape=(4, 3), device=devices.cpu, dtype=dtypes.float32)
        trace.bound_symbols = []
        prims.slice_prim(a, [0, 0], [1, 3])
        step = trace.bound_symbols[-1]
        out = TensorProxy(like=step.output)
    expected = step.from_bsym(args=(b, *step.args[1:]), output=out, subsymbols=[])
    made = replayed(step, (b, *step.args[1:]), out)
    def same(x, y):  # (a proxy's == is a traced op: compare proxies by identity)
        if isinstance(x, (tuple, list)):
            return type(x) is type(y) and len(x) == len(y) and all(same(i, j) for i, j in zip(x, y))
        return x is y or (not isinstance(x, TensorProxy) and x == y)

    for f in dataclasses.fields(type(step)):
        assert same(getattr(made, f.name), getattr(expected, f.name)), f.name
    assert made.output is out and made.args[0] is b and made.subsymbols == []
    assert made.tags is not step.tags


def test_torch_functions_trusted_to_return_new_memory_do_so_in_eager():
    # fresh_results.py, Note [torch functions whose result is new memory]: each name the analysis trusts
    # is called on eager tensors (contiguous, transposed, one row) and shares no memory with them
    import torch
    from fusion_alias.fresh_results import _FRESH_RESULTS
    from fusion_alias.overlap import may_overlap

    calls = {
        "norm": lambda x: torch.norm(x), "cumsum": lambda x: torch.cumsum(x, 0),
        "cumprod": lambda x: torch.cumprod(x, 0), "cummax": lambda x: torch.cummax(x, 0),
        "cummin": lambda x: torch.cummin(x, 0), "logcumsumexp": lambda x: torch.logcumsumexp(x, 0),
        "roll": lambda x: torch.roll(x, 0, 0), "diff": lambda x: torch.diff(x, n=0),
        "tril": lambda x: torch.tril(x, 5), "triu": lambda x: torch.triu(x, -5),
        "renorm": lambda x: torch.renorm(x, 2, 0, 1e9), "outer": lambda x: torch.outer(x[0], x[0]),
        "kron": lambda x: torch.kron(x, torch.ones(1, 1)), "cross": lambda x: torch.cross(x[:3, :3], x[:3, :3], dim=1),
        "trace": lambda x: torch.trace(x), "sort": lambda x: torch.sort(x, 0),
        "argsort": lambda x: torch.argsort(x, 0), "topk": lambda x: torch.topk(x, x.shape[0], 0),
        "kthvalue": lambda x: torch.kthvalue(x, 1, 0), "msort": lambda x: torch.msort(x),
        "median": lambda x: (torch.median(x), *torch.median(x, 0)),
        "nanmedian": lambda x: (torch.nanmedian(x), *torch.nanmedian(x, 0)),
        "vector_norm": lambda x: torch.linalg.vector_norm(x),
        "clamp_min": lambda x: torch.clamp_min(x, -1e9), "clamp_max": lambda x: torch.clamp_max(x, 1e9),
        "clip": lambda x: torch.clip(x, -1e9, 1e9), "index_fill": lambda x: x.index_fill(0, torch.tensor([], dtype=torch.long), 1.0),
        "masked_scatter": lambda x: x.masked_scatter(torch.zeros_like(x, dtype=torch.bool), x),
        "ldexp": lambda x: torch.ldexp(x, torch.zeros_like(x, dtype=torch.int32)),
        "put": lambda x: x.put(torch.tensor([], dtype=torch.long), torch.tensor([])),
        "addmm": lambda x: x.addmm(torch.zeros(x.shape[0], 1), torch.zeros(1, x.shape[1])),
        "addmv": lambda x: x[:, 0].addmv(x, x[0]), "addr": lambda x: x.addr(x[:, 0], x[0]),
        "addbmm": lambda x: x.addbmm(torch.zeros(1, x.shape[0], 1), torch.zeros(1, 1, x.shape[1])),
        "baddbmm": lambda x: x[None].baddbmm(torch.zeros(1, x.shape[0], 1), torch.zeros(1, 1, x.shape[1])),
        "select_scatter": lambda x: torch.select_scatter(x, x[0], 0, 0),
        "slice_scatter": lambda x: torch.slice_scatter(x, x, 0, 0, x.shape[0]),
        "diagonal_scatter": lambda x: torch.diagonal_scatter(x, x.diagonal(), 0),
        "diag_embed": lambda x: torch.diag_embed(x),
        "tile": lambda x: torch.tile(x, (1, 1)),
        "l1_loss": lambda x: torch.nn.functional.l1_loss(x, x, reduction="none"),
        "pairwise_distance": lambda x: torch.nn.functional.pairwise_distance(x, x),
        "mode": lambda x: torch.mode(x, 0),
    }
    # elementwise ops whose result may equal the argument's values (the out-of-place halves of
    # inplace_lookasides.py's in-place ops): one or two tensor arguments
    for name in ("frac", "nan_to_num", "logit", "deg2rad", "rad2deg", "sinc", "i0", "expm1", "log2", "log10",
                 "exp2", "tan", "asin", "erfinv", "lgamma", "digamma", "bitwise_not", "square", "negative",
                 "sgn", "fix", "erfc"):
        calls[name] = (lambda f: lambda x: f(x if f is not torch.bitwise_not else x > 0))(getattr(torch, name))
    for name in ("xlogy", "hypot", "nextafter", "heaviside", "logical_and", "logical_or", "true_divide",
                 "floor_divide", "arctan2"):
        calls[name] = (lambda f: lambda x: f(x, x))(getattr(torch, name))
    # (session 20: elementwise functions whose out= fusion_alias traces; the integer ones on x's own bytes as int32)
    for name in ("acos", "acosh", "asinh", "atan", "atanh", "cosh", "sinh", "angle", "signbit", "isneginf",
                 "isposinf"):
        calls[name] = (lambda f: lambda x: f(x))(getattr(torch, name))
    for name in ("fmax", "fmin", "logaddexp", "logaddexp2"):
        calls[name] = (lambda f: lambda x: f(x, x))(getattr(torch, name))
    for name in ("gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift"):
        calls[name] = (lambda f: lambda x: f(x.view(torch.int32), x.view(torch.int32) & 7))(getattr(torch, name))
    assert set(calls) == set(_FRESH_RESULTS)
    base = torch.randn(4, 4)
    for name, call in calls.items():
        for x in (base, base.t(), base[1:3]):
            out = call(x)
            for o in (out if isinstance(out, tuple) else (out,)):
                assert not may_overlap(o, x), name


def test_may_overlap_itself_never_says_no_wrongly_and_passes_every_plain_view():
    # overlap.py, Note [a tensor whose elements overlap each other]: against the offsets themselves,
    # on random as_strided layouts (a "no" is always right), and on random chains of plain views of
    # a contiguous tensor (always "no": they are never refused)
    import random
    import torch
    from fusion_alias.overlap import may_overlap_itself

    rng = random.Random(0)
    storage = torch.zeros(4096)
    for _ in range(3000):
        nd = rng.randint(0, 4)
        size = [rng.randint(0, 5) for _ in range(nd)]
        stride = [rng.randint(0, 12) for _ in range(nd)]
        t = storage.as_strided(size, stride)
        offsets = torch.arange(4096).as_strided(size, stride).flatten().tolist()
        overlaps = len(set(offsets)) < len(offsets)
        assert may_overlap_itself(t) or not overlaps, (size, stride)
    for _ in range(1000):
        t = torch.zeros([rng.randint(1, 6) for _ in range(rng.randint(1, 4))])
        for _ in range(rng.randint(1, 4)):
            d = rng.randrange(t.dim())
            op = rng.choice(["slice", "select", "permute", "unsqueeze"])
            if op == "slice" and t.shape[d] > 0:
                start = rng.randrange(t.shape[d])
                t = t.narrow(d, start, rng.randint(1, t.shape[d] - start))[
                    (slice(None),) * d + (slice(None, None, rng.randint(1, 3)),)]
            elif op == "select" and t.dim() > 1 and t.shape[d] > 0:
                t = t.select(d, rng.randrange(t.shape[d]))
            elif op == "permute":
                t = t.permute(*rng.sample(range(t.dim()), t.dim()))
            elif op == "unsqueeze":
                t = t.unsqueeze(d)
        assert not may_overlap_itself(t), (t.shape, t.stride())
