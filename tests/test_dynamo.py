"""torch.compile with fusion_alias.dynamo_backend(): equal to eager, same regions as fusion_alias.jit."""

import copy

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from helpers import as_tuple, region_count
from programs import SEED_PROGRAMS, aliased_inputs, f


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _base(seed):
    return torch.randn(5, 5, generator=torch.Generator().manual_seed(seed))


def _check_call(fn, compiled, make_inputs, seed):
    base = _base(seed)
    b_eager, b_comp = base.clone(), base.clone()
    args_eager, args_comp = make_inputs(b_eager), make_inputs(b_comp)
    expected = as_tuple(fn(*args_eager))
    got = as_tuple(compiled(*args_comp))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
    torch.testing.assert_close(b_comp, b_eager)  # the writes through every alias
    for a, b in zip(args_comp, args_eager):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn, make_inputs, bound", SEED_PROGRAMS, ids=[p[0].__name__ for p in SEED_PROGRAMS])
def test_seed_programs_through_torch_compile(fn, make_inputs, bound, schedule):
    backend = fusion_alias.dynamo_backend(backend="reference", schedule=schedule)
    compiled = torch.compile(fn, backend=backend)
    _check_call(fn, compiled, make_inputs, seed=0)  # first call: compiles
    _check_call(fn, compiled, make_inputs, seed=1)  # cached
    assert len(backend.compiled_pieces) == 1

    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    jitted(*make_inputs(_base(0)))
    assert backend.region_count() == region_count(jitted) <= bound


def test_alias_structure_changes_under_one_dynamo_graph():
    """Dynamo does not guard on overlap (Note [aliased graph inputs under Dynamo]); our guard does."""
    backend = fusion_alias.dynamo_backend(backend="reference")
    compiled = torch.compile(f, backend=backend)
    independent = lambda x: (x, torch.randn(5, 5, generator=torch.Generator().manual_seed(3))[0, 0].clone())  # noqa: E731
    _check_call(f, compiled, independent, seed=0)
    # 2: ``b.tanh_()``'s 0-d value is broadcast into the product while ``b`` is written back: the
    # read of ``b`` runs a region earlier (graph.py, Note [elements moved from written memory])
    assert backend.region_count() == 2
    _check_call(f, compiled, aliased_inputs, seed=1)
    assert backend.region_count() == 2
    _check_call(f, compiled, independent, seed=2)
    assert len(backend.compiled_pieces) == 1
    assert backend.compiled_pieces[0].jitted.compiled_structures == 2


class ResidualBlock(torch.nn.Module):
    """BatchNorm in training mode (running stats written in place), ``y += residual``, ``ReLU(inplace=True)``."""

    def __init__(self, width=8):
        super().__init__()
        self.linear = torch.nn.Linear(width, width)
        self.bn = torch.nn.BatchNorm1d(width)
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x, residual):
        y = self.bn(self.linear(x))
        y += residual
        return self.relu(y)


def _modules():
    torch.manual_seed(0)
    m = ResidualBlock().train()
    return copy.deepcopy(m), copy.deepcopy(m), copy.deepcopy(m)


def _assert_state_equal(m, ref):
    for (name, t), (_, t_ref) in zip(m.state_dict().items(), ref.state_dict().items()):
        torch.testing.assert_close(t, t_ref, msg=lambda s: f"{name}: {s}")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_module_with_inplace_ops_no_grad(schedule):
    eager, jit_m, comp_m = _modules()
    backend = fusion_alias.dynamo_backend(backend="reference", schedule=schedule)
    compiled = torch.compile(comp_m, backend=backend)
    jitted = fusion_alias.jit(jit_m, backend="reference", schedule=schedule)
    for step in range(2):  # first and cached call; the running stats move each step
        x = torch.randn(6, 8, generator=torch.Generator().manual_seed(step))
        r = torch.randn(6, 8, generator=torch.Generator().manual_seed(10 + step))
        with torch.no_grad():
            expected = eager(x.clone(), r.clone())
            got_c = compiled(x.clone(), r.clone())
            got_j = jitted(x.clone(), r.clone())
        torch.testing.assert_close(got_c, expected)
        torch.testing.assert_close(got_j, expected)
        _assert_state_equal(comp_m, eager)
        _assert_state_equal(jit_m, eager)
    assert int(comp_m.bn.num_batches_tracked) == 2
    assert backend.region_count() == region_count(jitted)


def test_module_with_inplace_ops_grad():
    eager, _, comp_m = _modules()
    backend = fusion_alias.dynamo_backend(backend="reference")
    compiled = torch.compile(comp_m, backend=backend)
    for step in range(2):
        x = torch.randn(6, 8, generator=torch.Generator().manual_seed(step))
        r = torch.randn(6, 8, generator=torch.Generator().manual_seed(10 + step))
        expected = eager(x.clone(), r.clone())
        got = compiled(x.clone(), r.clone())
        torch.testing.assert_close(got, expected)
        expected.square().sum().backward()
        got.square().sum().backward()
        for (name, p), (_, p_ref) in zip(comp_m.named_parameters(), eager.named_parameters()):
            torch.testing.assert_close(p.grad, p_ref.grad, msg=lambda s: f"grad of {name}: {s}")
        _assert_state_equal(comp_m, eager)


def test_executors_option_refused():
    with pytest.raises(TypeError, match="executors"):
        fusion_alias.dynamo_backend(executors=[])


def _added_inplace_ops(x, y):
    h = x * 2
    torch.sigmoid_(h)  # Thunder 0.2.6 lacks both; fusion_alias traces them (inplace_lookasides.py)
    h[0].fill_(0.5)
    y.clamp_min_(0.1)
    return h + y


def _augmented_assignments(x, y):
    m = x > 0
    m &= y < 1  # Dynamo's graph: operator.iand(m, lt); Thunder's proxy lacks __iand__
    y //= 0.5
    y %= 3
    return x * m + y


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [_added_inplace_ops, _augmented_assignments], ids=lambda fn: fn.__name__)
def test_inplace_ops_fusion_alias_adds_stay_in_one_piece(fn, schedule):
    """Note [in-place ops fusion_alias adds, under torch.compile]: ThunderFX's splitter sent them to Inductor."""
    backend = fusion_alias.dynamo_backend(backend="reference", schedule=schedule)
    compiled = torch.compile(fn, backend=backend)
    for seed in (0, 1):
        g = torch.Generator().manual_seed(seed)
        x, y = torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g)
        xc, yc = x.clone(), y.clone()
        want, got = fn(x, y), compiled(xc, yc)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(yc, y)
    assert len(backend.compiled_pieces) == 1
    assert not any(r.split_reasons for r in backend.subgraph_infos)


def test_saved_tensor_write_across_added_inplace_op_is_refused_as_in_fusion_alias_jit():
    """With the graph cut at ``torch.sigmoid_``, the pieces were checked alone: eager's backward error
    ("modified by an inplace operation") was missed. In one piece, fusion_alias refuses it as its jit does."""
    def fn(x):
        y = x.clone()
        torch.relu_(y)
        torch.sigmoid_(y)
        return y

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        fn(torch.randn(4, requires_grad=True)).sum().backward()
    compiled = torch.compile(fn, backend=fusion_alias.dynamo_backend(backend="reference"))
    with pytest.raises(Exception, match="saves .* for the backward"):
        compiled(torch.randn(4, requires_grad=True)).sum().backward()


def _adam_foreach(ps, gs, ms, vs):
    torch._foreach_mul_(ms, 0.9)
    torch._foreach_add_(ms, gs, alpha=0.1)
    torch._foreach_mul_(vs, 0.999)
    torch._foreach_addcmul_(vs, gs, gs, value=0.001)
    den = torch._foreach_sqrt(vs)
    torch._foreach_add_(den, 1e-8)
    torch._foreach_addcdiv_(ps, ms, den, value=-0.01)
    return ps


def _adam_state(seed):
    g = torch.Generator().manual_seed(seed)
    flat = torch.randn(7, generator=g)  # the parameters: views of one flat buffer
    return ([flat[:3], flat[3:].view(2, 2)], [torch.randn(3, generator=g), torch.randn(2, 2, generator=g)],
            [torch.zeros(3), torch.zeros(2, 2)], [torch.zeros(3), torch.zeros(2, 2)])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_foreach_optimizer_step_is_one_fusion_alias_piece(schedule):
    """Thunder 0.2.6 has no ``torch._foreach_*``: ThunderFX's splitter sent the whole step to Inductor, and no
    fusion_alias piece ran (inplace_lookasides.py, Note [in-place ops fusion_alias adds, under torch.compile])."""
    backend = fusion_alias.dynamo_backend(backend="reference", schedule=schedule)
    compiled = torch.compile(_adam_foreach, backend=backend)
    for seed in (0, 1):
        want_state, got_state = _adam_state(seed), _adam_state(seed)
        want, got = _adam_foreach(*want_state), compiled(*got_state)
        torch.testing.assert_close(got, want)
        for a, b in zip(got_state, want_state):
            torch.testing.assert_close(a, b)
        torch.testing.assert_close(got_state[0][0]._base, want_state[0][0]._base)  # the flat buffer
    assert len(backend.compiled_pieces) == 1
    assert not any(r.split_reasons for r in backend.subgraph_infos)
    jitted = fusion_alias.jit(_adam_foreach, backend="reference", schedule=schedule)
    jitted(*_adam_state(0))
    assert backend.region_count() == region_count(jitted)


def _fuzz_dynamo_script():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "fuzz_dynamo.py"
    spec = importlib.util.spec_from_file_location("fuzz_dynamo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fuzz_dynamo_script_runs_programs_through_torch_compile():
    """scripts/fuzz_dynamo.py's core (the campaign of docs/testing.md, session 19) on 2 programs of one seed."""
    script = _fuzz_dynamo_script()
    report = script.run_dynamo_fuzz(programs=2, seed=20731, generators=("basic",))
    assert report.programs == 2 and report.runs == 2
    assert report.failures == [], [f.detail for f in report.failures]
    assert report.ok >= 1


def test_fuzz_dynamo_script_reads_globals_rebound_between_calls():
    """Seed 20735 #21 (``hidden``: ``GLOBAL_h0`` rebound before each call, then written in place): the module
    Dynamo reads the program's globals from is refreshed on each call (Note [fuzz programs are exec'd source,
    Dynamo wants their module]); a copy made once let the compiled call write eager's tensor, under every
    backend, Dynamo's own ``eager`` included."""
    script = _fuzz_dynamo_script()
    compared = script.compare_backends(20735, 21, ("calls", "hidden"), False, "reads-first",
                                       backends=("eager", "fusion_alias"))
    assert {which: status for which, (status, _) in compared.items()} == {"eager": "ok", "fusion_alias": "ok"}, compared


def _view_written_by_next_piece(a):
    t0 = a.t()
    t1 = t0.sort(-2)[0]
    t0.add_(t0.roll(1, -2))  # ThunderFX cuts the graph at roll: t0 is one piece's output, the next writes it
    return (t1,)


def _grad_run(fn, seed):
    leaf = torch.randn(4, 6, generator=torch.Generator().manual_seed(seed)).requires_grad_()
    a = leaf * 1
    out = as_tuple(fn(a))
    sum((o * (i + 1)).sum() for i, o in enumerate(out)).backward()
    return [o.detach() for o in out], a.detach(), leaf.grad


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_output_view_of_an_input_written_by_a_later_piece_with_grad(schedule):
    """Fuzz seed 20737 #12 (``--grad``): a fusion_alias piece returned the view ``t0`` of its input through
    Thunder's autograd Function and the next piece's write into it raised PyTorch's "is a view and is being
    modified inplace" (Note [an output view of an argument, written in place later])."""
    compiled = torch.compile(_view_written_by_next_piece,
                             backend=fusion_alias.dynamo_backend(backend="reference", schedule=schedule))
    for seed in (0, 1):
        got, want = _grad_run(compiled, seed), _grad_run(_view_written_by_next_piece, seed)
        for g, w in zip(got, want):  # outputs, the input after the call, the leaf's gradient
            torch.testing.assert_close(g, w)


def test_output_view_of_an_input_written_by_the_caller_with_grad():
    """The same class under fusion_alias.jit: ``a.t()`` returned, then written in place by the caller."""

    def fn(a):
        return a.t(), a * 2

    def use(f):
        def run(a):
            v, w = f(a)
            v.mul_(3)  # eager: a write into ``a`` through its view
            return v, w, a * 1

        return run

    got = _grad_run(use(fusion_alias.jit(fn, backend="reference")), 2)
    want = _grad_run(use(fn), 2)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


def _views_of_a_written_input(a, b, c):
    t0 = c.view(-1)
    t1 = t0[1::2]
    t2 = b * a
    c.clip_(-0.3, 0.3)
    t4 = t1.unsqueeze(1)
    t0.detach()[1] = -1.5  # in the next piece: eager's write into c, through the view
    return (t1, a, t4, t2)


def test_output_views_of_a_written_input_written_by_a_later_piece_with_grad():
    """Fuzz seed 20739 #3 (``--grad``), less its return of ``c`` itself: the piece's outputs ``t0``, ``t1``,
    ``t4`` were views of ``c``'s final value, a copy ``write_back`` copies into ``c``, and the next piece's
    write through ``t0.detach()`` raised "its base ... has been modified inplace" (Note [an output view of
    an argument, written in place later])."""

    def run(fn):
        g = torch.Generator().manual_seed(0)
        x0_leaf = torch.rand(4, 4, generator=g).requires_grad_()
        x2_leaf = torch.rand(4, generator=g).requires_grad_()
        x0, x2 = x0_leaf * 1, x2_leaf * 1
        out = fn(x0, x0, x2)
        sum((o * (i + 1)).sum() for i, o in enumerate(out)).backward()
        return [o.detach() for o in out] + [x0.detach(), x2.detach(), x0_leaf.grad, x2_leaf.grad]

    compiled = torch.compile(_views_of_a_written_input, backend=fusion_alias.dynamo_backend(backend="reference"))
    for g, w in zip(run(compiled), run(_views_of_a_written_input)):
        torch.testing.assert_close(g, w)


def _out_arguments(a, b):
    torch.add(a, b, out=a)
    torch.exp(b[0], out=b[1])
    return a * 2, b.sum()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_out_arguments_stay_in_the_piece_and_run_as_eager(schedule):
    """out_arguments.py, Note [out= under torch.compile]: the splitter sent each out= node to Inductor."""
    backend = fusion_alias.dynamo_backend(backend="reference", schedule=schedule)
    compiled = torch.compile(_out_arguments, backend=backend)
    make = [lambda base: (base[:2], base[2:4]), lambda base: (base, base[:, :1].expand(5, 5).clone())]
    for seed, make_inputs in enumerate(make):
        _check_call(_out_arguments, compiled, make_inputs, seed)
    assert not any(r.split_reasons for r in backend.subgraph_infos)


def test_out_that_partly_overlaps_an_operand_is_refused_under_torch_compile():
    def f(a, b):
        torch.add(a, b, out=a)
        return a * 1

    x = torch.randn(4, 4)
    with pytest.raises(RuntimeError, match="single memory location"):
        f(x.clone(), x.clone().t())  # (no overlap: runs) ...
        f(x, x.t())  # ... eager refuses a partial overlap
    compiled = torch.compile(f, backend=fusion_alias.dynamo_backend(backend="reference"))
    compiled(x.clone(), torch.randn(4, 4))
    with pytest.raises(fusion_alias.AliasInputError, match="single memory location"):
        compiled(x, x.t())
