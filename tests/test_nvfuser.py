"""The nvFuser backend.

Two kinds of tests live here:

* ``@pytest.mark.cuda`` tests run the seed programs, the large race programs
  and the alias-keyed cache on a real GPU through real nvFuser. They are
  skipped, with the reason, wherever ``fusion_alias.backends.nvfuser.missing()``
  says the backend cannot run (every CPU machine). ``scripts/gpu_check.sh``
  runs them on a GPU machine: ``pytest -m cuda tests/test_nvfuser.py``.
* Unmarked tests run everywhere: the refusal without CUDA/nvFuser, the cache
  key, the runtime alias guard and the adapter's translation of the lowering's
  calls (driven into a recording definition, so no nvFuser is needed).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import torch

import fusion_alias
from fusion_alias.backends import nvfuser as nvb
from fusion_alias.lowering import RecordedDataType, RecordingFusionDefinition, define_region

from helpers import as_tuple, region_count
from helpers import assert_same as _assert_same
from programs import SEED_PROGRAMS, aliased_inputs, f, h, tanh_pow4, write_then_add

WHY_NOT = nvb.missing()
needs_nvfuser = pytest.mark.skipif(WHY_NOT is not None, reason=f"nvFuser backend cannot run here: {WHY_NOT}")
cuda = [pytest.mark.cuda, needs_nvfuser]

SEED_IDS = [p[0].__name__ for p in SEED_PROGRAMS]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _on(device, make_inputs, base):
    """``make_inputs(base)`` with any tensor it made elsewhere moved next to ``base``."""
    return tuple(
        a.to(device) if isinstance(a, torch.Tensor) and a.device != torch.device(device) else a
        for a in make_inputs(base)
    )


def _run_pair(fn, make_inputs, jitted, *, shape=(5, 5), seed=0, device="cuda"):
    """Eager and jitted on fresh copies with the same aliasing; both results and final states."""
    gen = torch.Generator().manual_seed(seed)
    base = torch.randn(shape, generator=gen).to(device)
    b_eager, b_jit = base.clone(), base.clone()
    a_eager, a_jit = _on(device, make_inputs, b_eager), _on(device, make_inputs, b_jit)
    want = as_tuple(fn(*a_eager))
    got = as_tuple(jitted(*a_jit))
    if device == "cuda":
        torch.cuda.synchronize()
    return got, want, (b_jit, a_jit), (b_eager, a_eager)


def _wrappers(jitted):
    return [b._call_ctx[b.sym.name] for b in fusion_alias.regions(jitted)]


def _reference_specs(fn, make_inputs):
    """Region specs of ``fn`` compiled on CPU with the reference backend."""
    jitted = fusion_alias.jit(fn, backend="reference")
    jitted(*make_inputs(torch.randn(5, 5)))
    return [w.spec for w in _wrappers(jitted)]


def _spec_with_inputs(fn, make_inputs, n_tensor_inputs):
    for spec in _reference_specs(fn, make_inputs):
        if sum(isinstance(p, torch.Tensor) or hasattr(p, "shape") for p in spec.inputs) == n_tensor_inputs:
            return spec
    raise AssertionError(f"no region of {fn.__name__} has {n_tensor_inputs} tensor inputs")


def _read_both(a, b):
    return a * 2 + b


def _transposed_inputs(base):
    return base, base.t()


def _two_input_spec():
    """A region with two 2-D tensor inputs in one alias group: ``a * 2 + b`` on ``(x, x.t())``.

    (Seed ``write_then_add`` served here until ``base_updates``: its regions now write one base and
    take one input of the memory each; a region that writes memory and also reads another input of
    it non-pointwise is what the partitioner never builds.)"""
    for spec in _reference_specs(_read_both, _transposed_inputs):
        if spec.alias_groups:
            return spec
    raise AssertionError("a * 2 + b on (x, x.t()) should have a region with an alias group")


# ---------------------------------------------------------------------------
# Everywhere: refusal, cache key, guard, adapter
# ---------------------------------------------------------------------------


@pytest.mark.skipif(WHY_NOT is None, reason="CUDA and nvFuser are present: nothing to refuse")
def test_backend_nvfuser_refuses_clearly_without_cuda_or_nvfuser():
    with pytest.raises(RuntimeError) as err:
        fusion_alias.jit(f, backend="nvfuser")
    msg = str(err.value)
    assert "CUDA" in msg or "nvFuser" in msg
    assert "backend='nvfuser'" in msg


@pytest.mark.skipif(WHY_NOT is None, reason="CUDA and nvFuser are present: nothing to refuse")
def test_wrapper_refuses_clearly_without_cuda_or_nvfuser():
    spec = _two_input_spec()
    with pytest.raises(RuntimeError, match="CUDA|nvFuser"):
        nvb.NvFuserFusion(spec)


def test_an_nvfuser_built_for_another_torch_is_named_in_the_refusal(monkeypatch):
    """A wheel built for another torch release fails to load with an undefined c10 symbol: say so."""
    import builtins

    real_import = builtins.__import__

    def broken_nvfuser(name, *args, **kwargs):
        if name == "nvfuser_direct":
            raise ImportError("libnvfuser_codegen.so: undefined symbol: _ZN3c1013MessageLoggerC1EPKciib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken_nvfuser)
    monkeypatch.setattr(nvb, "_import_error", [])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    nvb._nvfuser.cache_clear()
    try:
        why = nvb.missing()
    finally:
        nvb._nvfuser.cache_clear()
    assert "does not load with torch" in why and "undefined symbol" in why


def test_importing_fusion_alias_loads_no_nvfuser_module_without_cuda():
    code = (
        "import sys, torch, fusion_alias\n"
        "import fusion_alias.backends.nvfuser as nvb\n"
        "loaded = [m for m in ('nvfuser', 'nvfuser_direct', 'thunder.executors.nvfuserex_impl') if m in sys.modules]\n"
        "print('CUDA' if torch.cuda.is_available() else 'CPU', loaded)\n"
        "assert torch.cuda.is_available() or not loaded, loaded\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def _args_for(spec, big, scalar=None):
    """Arguments for ``spec``: ``big`` for every 2-D input, a fresh 0-d tensor (or ``scalar``) otherwise."""
    return [big if len(p.shape) == 2 else (torch.randn(()) if scalar is None else scalar) for p in spec.inputs]


def test_cache_key_separates_alias_groups():
    spec = _two_input_spec()  # (a, b) in one alias group
    unaliased = dataclasses.replace(spec, alias_groups=[])
    args = _args_for(spec, torch.randn(5, 5))
    k_aliased, k_plain = nvb.cache_key(spec, args), nvb.cache_key(unaliased, args)
    assert k_aliased != k_plain
    assert k_aliased[1] == tuple(map(tuple, spec.alias_groups)) and k_plain[1] == ()
    assert k_aliased[0] == k_plain[0]  # same layouts: only the aliasing tells them apart
    # layouts are part of it too
    assert nvb.cache_key(spec, _args_for(spec, torch.randn(5, 5).t())) != k_aliased


class _P:
    def __init__(self, name):
        self.name = name


def _guard_spec(groups=()):
    from types import SimpleNamespace

    return SimpleNamespace(name="R", inputs=[_P("u"), _P("v")], alias_groups=[list(g) for g in groups])


def test_guard_rejects_overlap_the_region_was_not_compiled_for():
    x = torch.randn(5, 5)
    with pytest.raises(RuntimeError, match="overlap") as err:
        nvb.check_aliasing(_guard_spec(), [x, x[0, 0]])
    assert "u and v" in str(err.value) and "set_()" in str(err.value)
    with pytest.raises(RuntimeError, match="overlap"):
        nvb.check_aliasing(_guard_spec(), [x, x])
    # separate tensors, or disjoint parts of one storage: fine
    nvb.check_aliasing(_guard_spec(), [x, torch.randn(())])
    z = torch.randn(6, 5)
    nvb.check_aliasing(_guard_spec(), [z[:5], z[5, 0]])


def test_guard_accepts_overlap_inside_an_alias_group():
    x = torch.randn(5, 5)
    nvb.check_aliasing(_guard_spec([("u", "v")]), [x, x[0, 0]])
    # a real region: its {a, b} group, a and b the same buffer
    spec = _two_input_spec()
    nvb.check_aliasing(spec, _args_for(spec, x))
    with pytest.raises(RuntimeError, match="overlap"):
        nvb.check_aliasing(dataclasses.replace(spec, alias_groups=[]), _args_for(spec, x))


def test_guard_compares_exactly_within_one_storage():
    x = torch.randn(6, 5)
    even, odd = x[0::2], x[1::2]  # interleaved rows: same storage, overlapping ranges, no shared byte
    nvb.check_aliasing(_guard_spec(), [even, odd])
    with pytest.raises(RuntimeError, match="u and v"):
        nvb.check_aliasing(_guard_spec(), [even, x[2:4]])


def _adapter(layouts):
    rec = RecordingFusionDefinition()
    return rec, nvb.NvFuserAdapter(rec, layouts, RecordedDataType)


def test_adapter_passes_real_layouts_and_writes_back_a_fresh_value():
    spec = _spec_with_inputs(tanh_pow4, aliased_inputs, 1)  # a.tanh_(): write-back into its input
    layouts = [((5, 5), [False, True], [1, 0], False)]  # e.g. a row-strided input
    src = nvb.preview_source(spec, layouts)
    assert "contiguity=[False, True]" in src and "stride_order=[1, 0]" in src and "is_cpu=False" in src
    rec = RecordingFusionDefinition()
    define_region(nvb.NvFuserAdapter(rec, layouts, RecordedDataType), spec, RecordedDataType)
    (alias,) = [c for c in rec.calls if c.op == "add_output" and "alias_input" in c.kwargs]
    producer = {c.out.index: c for c in rec.calls if c.out is not None}
    written = producer[alias.args[0].index]
    assert written.op == "ops.set"  # never the computed value itself (it may also be a plain output)
    assert producer[written.args[0].index].op == "ops.cast"  # in the destination's dtype
    assert producer[alias.kwargs["alias_input"].index].op == "define_tensor"


def test_adapter_write_back_of_an_input_into_another_input():
    # h's second region writes one input into another: nvFuser needs a computed value there.
    spec = _spec_with_inputs(h, aliased_inputs, 2)
    src = nvb.preview_source(spec)
    # the region mixes shapes, so the write-back is deferred (Note [write-backs into strided inputs]):
    # the set value is the last plain output, which the wrapper copies into the input
    assert "alias_input=T" not in src and "fd.ops.set(" in src
    last = src.rstrip().splitlines()[-1]
    setter = [line for line in src.splitlines() if "fd.ops.set(" in line][-1].split(" = ")[0].strip()
    assert last.strip() == f"fd.add_output({setter})"


def test_adapter_translations():
    rec, ad = _adapter([((4, 3), [True, True], [1, 0], False)])
    t = ad.define_tensor(shape=[4, 3], contiguity=[True, True], dtype=RecordedDataType.Float, is_cpu=True)
    ad.ops.sum(t, dims=[], keepdim=False)
    ad.ops.max(t, dims=[1], keepdim=False)
    ad.ops.squeeze(t, dims=[])
    ad.ops.broadcast_in_dim(t, shape=[2, 4, 3], broadcast_dims=[1, 2])
    ad.ops.reshape(t, new_shape=(12,))
    ad.ops.slice(t, start_indices=[0, 0], end_indices=[2, 3], strides=[1, 1])
    with pytest.raises(NotImplementedError, match="step"):
        ad.ops.slice(t, start_indices=[0, 0], end_indices=[4, 3], strides=[2, 1])
    s = ad.define_scalar(1.5, dtype=RecordedDataType.Double)
    ad.ops.full(shape=[2], fill_value=s, dtype=RecordedDataType.Float)
    ad.ops.cast(t, dtype=RecordedDataType.Half)
    ops = [(c.op, c.args[1:], c.kwargs) for c in rec.calls[1:]]
    assert ops[0][0] == "ops.set"  # empty reduction: the value itself
    assert ops[1] == ("ops.max", ([1], False), {})
    assert ops[2][0] == "ops.set"
    assert ops[3] == ("ops.broadcast_in_dim", ([2, 4, 3], [1, 2]), {})
    assert ops[4] == ("ops.reshape", ([12],), {})
    assert ops[5] == ("ops.slice", ([0, 0], [2, 3], [1, 1]), {})
    assert ops[6][0] == "define_scalar" and ops[6][1] == ("Double",)
    assert ops[7][0] == "ops.full" and ops[7][1][1:] == ("Float",)
    assert ops[8] == ("ops.cast", ("Half",), {})
    assert rec.calls[0].kwargs["stride_order"] == [1, 0]


def test_adapter_casts_where_to_the_trace_dtype():
    def fn(a):
        return torch.where(a > 0, a, 0.5)

    specs = _reference_specs(fn, lambda x: (x,))
    (spec,) = [s for s in specs if any(b.sym.name == "where" for b in s.bsyms)]
    src = nvb.preview_source(spec)
    where_line = next(line for line in src.splitlines() if "fd.ops.where" in line)
    out = where_line.split("=")[0].strip()
    assert f"fd.ops.cast({out}, DataType.Float)" in src


def test_strided_slices_are_not_sent_to_nvfuser():
    def fn(a):
        return a[::2] * 2

    specs = _reference_specs(fn, lambda x: (x,))
    reasons = [nvb.unsupported_reason(s) for s in specs]
    assert any(r and "step" in r for r in reasons), reasons


def test_nvfuser_takes_cuda_tensors_cpu_scalars_and_numbers_only():
    assert nvb._nvfuser_can_take([torch.randn(()), 2.0, 3])
    assert not nvb._nvfuser_can_take([torch.randn(3)])


# ---------------------------------------------------------------------------
# A stand-in for nvFuser on CPU: the wrapper's whole call path, without a GPU
# (fusion_alias/backends/nvfuser_stand_in.py says what it models and what not)
# ---------------------------------------------------------------------------

from fusion_alias.backends import nvfuser_stand_in  # noqa: E402


@pytest.fixture(params=[False, True], ids=["aliased-hidden", "aliased-returned"])
def fake_nvfuser(request, monkeypatch):
    """Route every region through NvFuserFusion over the stand-in (CPU tensors)."""
    fake = nvfuser_stand_in.stand_in(return_aliased=request.param)
    for module, name, value in nvfuser_stand_in.patches(fake):
        monkeypatch.setattr(module, name, value)
    return fake


@pytest.mark.parametrize("fn,make_inputs,max_regions", SEED_PROGRAMS, ids=SEED_IDS)
def test_wrapper_call_path_on_fake_nvfuser(fake_nvfuser, fn, make_inputs, max_regions):
    jitted = fusion_alias.jit(fn, backend="reference")
    for seed in range(2):  # build, then the cached definition
        got, want, sj, se = _run_pair(fn, make_inputs, jitted, seed=seed, device="cpu")
        _assert_same(got, want, sj, se)
    wrappers = _wrappers(jitted)
    assert wrappers and all(isinstance(w, nvb.NvFuserFusion) for w in wrappers)
    for w in wrappers:
        (key,) = w.cache_keys()
        assert key[1] == tuple(map(tuple, w.spec.alias_groups))
    text = fusion_alias.explain(jitted)
    assert "stride_order=" in text and "alias group" in text and "not built yet" not in text


def test_wrapper_views_and_escaping_results_on_fake_nvfuser(fake_nvfuser):
    def fn(a):
        t = a.mul_(0.5)  # copy_ result: must be a itself
        v = t.permute(1, 0)  # a view of it
        c = a * 2
        c.add_(1)  # a write into a region-made tensor: a "final" output
        return t, v, c

    jitted = fusion_alias.jit(fn, backend="reference")
    x0 = torch.randn(4, 3)
    x, y = x0.clone(), x0.clone()
    t, v, c = jitted(x)
    assert t.data_ptr() == x.data_ptr() and v.data_ptr() == x.data_ptr() and v.shape == (3, 4)
    want = fn(y)
    torch.testing.assert_close((t, v, c), want)
    torch.testing.assert_close(x, y)


def test_wrapper_has_thunders_wrapper_interface_on_fake_nvfuser(fake_nvfuser, monkeypatch):
    import thunder.examine

    monkeypatch.setattr(thunder.examine, "warn_fusions", lambda: False)  # it checks for CUDA + nvFuser
    fn, make_inputs, _ = SEED_PROGRAMS[0]
    jitted = fusion_alias.jit(
        fn, backend="reference", nv_store_fusion_inputs=True, nv_enable_options=["fuse_multiple_matmuls"]
    )
    for seed in range(2):
        got, want, sj, se = _run_pair(fn, make_inputs, jitted, seed=seed, device="cpu")
        _assert_same(got, want, sj, se)
    trace = thunder.last_traces(jitted)[-1]
    for w in _wrappers(jitted):
        assert w.use_cache and w.store_inputs and w.last_used is not None
        assert w.cache_info().misses == 1 and w.cache_info().hits == 1 and w.cache_info().currsize == 1
        assert w.last_used.execute_options == {"_enable_options": ["fuse_multiple_matmuls"]}
        assert w.last_inputs and all(isinstance(a, (torch.Tensor, int, float, bool)) for a in w.last_inputs)
        repro = thunder.examine.get_nvfuser_repro(trace, w.name)
        assert "add_output" in repro and "# inputs:" in repro
        w.cache_clear()
        assert w.cache_info().currsize == 0


def test_wrapper_skip_cache_rebuilds_on_fake_nvfuser(fake_nvfuser):
    fn, make_inputs, _ = SEED_PROGRAMS[0]
    jitted = fusion_alias.jit(fn, backend="reference", nv_skip_cache=True)
    for seed in range(2):
        got, want, sj, se = _run_pair(fn, make_inputs, jitted, seed=seed, device="cpu")
        _assert_same(got, want, sj, se)
    for w in _wrappers(jitted):
        assert not w.use_cache and not w.store_inputs and w.last_inputs is None
        assert w.cache_info().misses == 2 and w.cache_info().hits == 0
        assert w.last_used.execute_options == {}


def test_wrapper_guard_on_fake_nvfuser(fake_nvfuser):
    spec = _two_input_spec()
    without = nvb.NvFuserFusion(dataclasses.replace(spec, alias_groups=[]))
    x = torch.randn(5, 5)
    with pytest.raises(RuntimeError, match="overlap"):
        without(*_args_for(spec, x))
    assert not without.cache_keys()  # refused before building anything
    assert "not built yet" in repr(without)
    without(*[torch.randn(5, 5) if len(p.shape) == 2 else torch.randn(()) for p in spec.inputs])
    assert len(without.cache_keys()) == 1
    without(*[torch.randn(5, 5).t() if len(p.shape) == 2 else torch.randn(()) for p in spec.inputs])
    assert len(without.cache_keys()) == 2  # another layout, another definition


def test_wrapper_keeps_strided_slices_off_nvfuser(fake_nvfuser):
    def fn(a):
        return a[::2] * 2

    jitted = fusion_alias.jit(fn, backend="reference")
    x = torch.randn(5, 4)
    torch.testing.assert_close(jitted(x), fn(x))
    (w,) = _wrappers(jitted)
    assert w.fallback_reason and "step" in w.fallback_reason
    assert "not sent to nvFuser" in repr(w)


# ---------------------------------------------------------------------------
# CUDA + nvFuser
# ---------------------------------------------------------------------------


@pytest.mark.cuda
@needs_nvfuser
@pytest.mark.parametrize("fn,make_inputs,max_regions", SEED_PROGRAMS, ids=SEED_IDS)
def test_seed_program_on_nvfuser(fn, make_inputs, max_regions):
    jitted = fusion_alias.jit(fn, backend="nvfuser")
    got, want, sj, se = _run_pair(fn, make_inputs, jitted)
    _assert_same(got, want, sj, se)
    wrappers = _wrappers(jitted)
    assert wrappers and all(isinstance(w, nvb.NvFuserFusion) for w in wrappers)

    # same number of regions as the reference backend on CPU
    ref = fusion_alias.jit(fn, backend="reference")
    _run_pair(fn, make_inputs, ref, device="cpu")
    assert region_count(jitted) == region_count(ref)
    assert 1 <= region_count(jitted) <= max_regions

    # cached call on fresh inputs
    got, want, sj, se = _run_pair(fn, make_inputs, jitted, seed=1)
    _assert_same(got, want, sj, se)

    # explain shows nvFuser's own definition and the alias groups
    text = fusion_alias.explain(jitted)
    assert "define_tensor" in text and "alias group" in text


def scalar_view_write_then_base_read(a, b):
    b.tanh_()
    return a * 2


RACE_PROGRAMS = [scalar_view_write_then_base_read, write_then_add, h, f]


@pytest.mark.cuda
@needs_nvfuser
@pytest.mark.parametrize("fn", RACE_PROGRAMS, ids=[p.__name__ for p in RACE_PROGRAMS])
def test_no_race_at_large_sizes(fn):
    """2**22 elements: where nvFuser's segments were seen to race on a shared buffer."""
    jitted = fusion_alias.jit(fn, backend="nvfuser")
    for seed in range(4):
        got, want, sj, se = _run_pair(fn, aliased_inputs, jitted, shape=(2048, 2048), seed=seed)
        _assert_same(got, want, sj, se)


@pytest.mark.cuda
@needs_nvfuser
def test_alias_groups_key_the_definitions():
    def exp_tanh_of_view(a, b):  # with b = a.view(5, 5) one region reads both: an alias group
        return a.exp_() * b.view(5, 5).tanh_()

    jitted = fusion_alias.jit(exp_tanh_of_view, backend="nvfuser")

    def same_buffer(x):
        return (x, x.view(5, 5))

    def independent(x):  # (called once per side: a fresh random b would differ between them)
        return (x, x.clone())

    got, want, sj, se = _run_pair(exp_tanh_of_view, same_buffer, jitted)
    _assert_same(got, want, sj, se)
    aliased = _wrappers(jitted)
    got, want, sj, se = _run_pair(exp_tanh_of_view, independent, jitted)
    _assert_same(got, want, sj, se)
    plain = _wrappers(jitted)
    assert jitted.compiled_structures == 2
    assert any(w.spec.alias_groups for w in aliased)
    assert not any(w.spec.alias_groups for w in plain)
    for w in aliased + plain:
        assert w.cache_keys(), f"{w.name} built no definition"
        for key in w.cache_keys():
            assert key[1] == tuple(map(tuple, w.spec.alias_groups))

    # one spec, with and without its alias group: different keys, and the guard
    # refuses to run the unaliased definition on overlapping inputs
    (spec,) = [w.spec for w in aliased if w.spec.alias_groups]  # (a, t2), {a, t2}
    x = torch.randn(5, 5, device="cuda")
    args = _args_for(spec, x, torch.randn((), device="cuda"))  # a and t2: one buffer
    with_groups = nvb.NvFuserFusion(spec)
    without = nvb.NvFuserFusion(dataclasses.replace(spec, alias_groups=[]))
    with_groups(*args)
    assert nvb.cache_key(with_groups.spec, args) != nvb.cache_key(without.spec, args)
    with pytest.raises(RuntimeError, match="overlap"):
        without(*args)
    separate = [torch.randn(5, 5, device="cuda") if len(p.shape) == 2 else torch.randn((), device="cuda") for p in spec.inputs]
    without(*separate)
    assert without.cache_keys() and all(k[1] == () for k in without.cache_keys())


def _write_column_read_base(a, b):
    b.mul_(3)
    return a * 2


def _write_rows_read_base(a, b):
    b.add_(1)
    return a.sum(0)


def _write_transposed(a, b):
    b.copy_(b.exp())
    return a * 1


def _kv_write_read(cache, k, q):
    cache[:, 5:6].copy_(k)
    return (cache * q).sum(-1)


# Destinations that are not dense (a column, every other row, a KV-cache row) and one that is dense
# under a permutation (a transpose). Note [write-backs into strided inputs]: nvFuser wrote the
# first kinds as if they were contiguous.
STRIDED_DESTINATIONS = [
    ("column", _write_column_read_base, lambda x: (x, x[:, 1])),
    ("every_other_row", _write_rows_read_base, lambda x: (x, x[::2])),
    ("transposed", _write_transposed, lambda x: (x, x.t())),
    ("kv_cache_row", _kv_write_read, lambda x: (x.reshape(4, 16, -1), x[:4, :1].reshape(4, 1, -1).clone(), x[4:8, :1].reshape(4, 1, -1).clone())),
]


@pytest.mark.cuda
@needs_nvfuser
@pytest.mark.parametrize("fn,make_inputs", [c[1:] for c in STRIDED_DESTINATIONS], ids=[c[0] for c in STRIDED_DESTINATIONS])
def test_non_contiguous_destination(fn, make_inputs):
    """A write-back into a strided input: the bytes land where the strides say (found on an H200)."""
    jitted = fusion_alias.jit(fn, backend="nvfuser")
    for seed in range(2):
        got, want, sj, se = _run_pair(fn, make_inputs, jitted, shape=(64, 32), seed=seed)
        _assert_same(got, want, sj, se)


@pytest.mark.parametrize("fn,make_inputs", [c[1:] for c in STRIDED_DESTINATIONS], ids=[c[0] for c in STRIDED_DESTINATIONS])
def test_strided_write_backs_on_fake_nvfuser(fake_nvfuser, fn, make_inputs):
    """The fake writes non-dense destinations as nvFuser 0.2.36 did; the wrapper must not let it."""
    jitted = fusion_alias.jit(fn, backend="reference")
    for seed in range(2):
        got, want, sj, se = _run_pair(fn, make_inputs, jitted, shape=(64, 32), seed=seed, device="cpu")
        _assert_same(got, want, sj, se)
    wrappers = _wrappers(jitted)
    built = [b for w in wrappers for b in w._defs.values()]
    # a strided write-back is deferred, or (a region of copies only) never sent to nvFuser
    assert any(b.deferred for b in built) or any(nvb.only_copies(w.spec) for w in wrappers), (
        [(b.deferred, b.aliased_outputs) for b in built])


def test_a_region_of_copies_runs_on_torch(fake_nvfuser):
    """Note [a region of copies runs on torch]: the KV-cache update is one torch copy_, no nvFuser definition."""
    jitted = fusion_alias.jit(_kv_write_read, backend="reference")
    make_inputs = STRIDED_DESTINATIONS[-1][2]
    for seed in range(2):
        got, want, sj, se = _run_pair(_kv_write_read, make_inputs, jitted, shape=(64, 32), seed=seed, device="cpu")
        _assert_same(got, want, sj, se)
    copies = [w for w in _wrappers(jitted) if nvb.only_copies(w.spec)]
    assert len(copies) == 1 and not copies[0].cache_keys() and "only copies" in copies[0].fallback_reason
    assert "compiled backend" in repr(copies[0])
    others = [w for w in _wrappers(jitted) if w not in copies]
    assert others and all(w.cache_keys() for w in others)  # the read of the cache still runs on nvFuser


@pytest.mark.cuda
@needs_nvfuser
def test_thunder_repro_tools_read_the_wrapper():
    """thunder.examine.get_nvfuser_repro works on our regions, as on Thunder's own wrapper."""
    import thunder.examine

    jitted = fusion_alias.jit(h, backend="nvfuser", nv_store_fusion_inputs=True)
    got, want, sj, se = _run_pair(h, aliased_inputs, jitted)
    _assert_same(got, want, sj, se)
    trace = thunder.last_traces(jitted)[-1]
    for w in _wrappers(jitted):
        assert w.last_used is not None and w.last_inputs is not None
        assert w.cache_info().misses == 1
        repro = thunder.examine.get_nvfuser_repro(trace, w.name)
        assert "FusionDefinition" in repro and "add_output" in repro


# ---------------------------------------------------------------------------
# Found by the CPU definitions check (scripts/check_nvfuser_definitions.sh)
# ---------------------------------------------------------------------------


def test_write_back_of_an_expanded_value_is_made_concrete(monkeypatch):
    """nvFuser asserts on add_output(value, alias_input) when value has an expanded broadcast dim."""

    def fn(a, s):
        a.copy_(s.expand(5, 5))  # the written value is a 0-d tensor broadcast to a's shape
        return a * 2

    (spec,) = [s for s in _reference_specs(fn, lambda x: (x, torch.randn(()))) if s.writebacks]
    monkeypatch.setattr(nvb, "_expanded", lambda value: True)  # what nvFuser's domain printout says
    src = nvb.preview_source(spec)
    lines = src.splitlines()
    alias = next(i for i, line in enumerate(lines) if "alias_input" in line)
    before = "\n".join(lines[:alias])
    assert "fd.ops.full(" in before and "fd.ops.where(" in before, src
    monkeypatch.setattr(nvb, "_expanded", lambda value: False)
    assert "fd.ops.where(" not in nvb.preview_source(spec)


def test_expanded_reads_nvfusers_domain_printout():
    class Dom:
        def __init__(self, text):
            self.text = text

        def __str__(self):
            return self.text

    class Value:
        def __init__(self, *dims):
            self.dims = [Dom(d) for d in dims]

        def get_logical_domain(self):
            return self.dims

    assert nvb._expanded(Value("bS4{1}", "bS5{1 ex 3}"))
    assert not nvb._expanded(Value("bS0{1}", "iS1{3}"))
    assert not nvb._expanded(object())  # a stand-in without domains


def test_region_of_views_only_runs_nothing_on_fake_nvfuser(fake_nvfuser):
    def fn(a, c):
        t0 = a * 0.5
        t0.add_(-1.5)  # dead: t0 is never read
        return a, c.unsqueeze(0)

    jitted = fusion_alias.jit(fn, backend="reference")
    x = torch.randn(4, 6)
    got = jitted(x, x[0, 0])
    want = fn(x.clone(), x.clone()[0, 0])
    torch.testing.assert_close(got, want)
    (w,) = _wrappers(jitted)
    assert nvb.nothing_to_run(w.spec)
    assert not w.cache_keys() and "nothing for nvFuser to run" in repr(w)


def test_definitions_check_records_each_regions_argument_layouts():
    """fusion_alias.nvfuser_check's capture (the nvFuser build itself needs nvfuser_direct: see the script)."""
    from fusion_alias import nvfuser_check

    x = torch.randn(5, 5)
    records, error = nvfuser_check.collect_regions("h", h, aliased_inputs(x))
    assert error is None and len(records) == 2 and all(r.called for r in records)
    layouts = [list(r.layouts.values()) for r in records]
    assert [((5, 5), (5, 1))] in layouts[0]  # the region reading x itself
    assert any(((), ()) in ls[0] for ls in layouts)  # x[0, 0]: a 0-d view
    records, error = nvfuser_check.collect_regions("bad", lambda a: a.expand(2, 5).add_(1), (torch.randn(5),))
    assert error is not None  # eager rejects it too: reported, not fatal


def _sgd(p, g):
    p.add_(g, alpha=-0.1)


def _scale_by_counter(a, s):
    s.add_(1)
    return a * s


def test_in_kernel_write_backs_only_where_seen_right():
    """Note [write-backs into strided inputs]: nvFuser writes in-kernel only a pointwise region of one
    shape into row-major dense inputs; any other region's write-backs are copied by the wrapper."""
    from fusion_alias.backends.nvfuser_writebacks import defers_writebacks

    (sgd,) = _reference_specs(_sgd, lambda x: (x, x * 2))
    rows = ((5, 5), [True, True], [1, 0], False)
    assert "alias_input=" in nvb.preview_source(sgd)
    assert not defers_writebacks(sgd, [rows, rows])
    channels_last = ((5, 5), [True, True], [0, 1], False)  # dense, column-major
    p_in_channels_last = [channels_last if p.name == "p" else rows for p in sgd.inputs]
    assert defers_writebacks(sgd, p_in_channels_last)
    assert "alias_input=" not in nvb.preview_source(sgd, p_in_channels_last)
    g_in_channels_last = [channels_last if p.name == "g" else rows for p in sgd.inputs]  # read only: fine
    assert not defers_writebacks(sgd, g_in_channels_last)
    column = ((5,), [False], [0], False)
    (sgd_1d,) = _reference_specs(_sgd, lambda x: (x[:, 0], x[:, 1]))
    assert defers_writebacks(sgd_1d, [column, column])
    # a written 0-d value read through a broadcast
    specs = _reference_specs(_scale_by_counter, lambda x: (x, x.sum()))
    assert any(s.writebacks for s in specs)
    for spec in specs:
        if spec.writebacks:
            layouts = [rows if len(p.shape) == 2 else ((), [], [], False) for p in spec.inputs if hasattr(p, "shape")]
            assert defers_writebacks(spec, layouts) == any(len(p.shape) == 2 for p in spec.inputs if hasattr(p, "shape"))


def _where_of_a_pushed_down_view(a, c):
    t0 = a.clone()
    t1 = t0.detach().select(2, 3)
    t0.add_(torch.where(t0 > 0, c, t0), alpha=2.0)
    t1.clamp_(-0.5, 0.5)
    return t1, t0


def test_pushed_down_view_keeps_the_ops_dtype_on_fake_nvfuser(fake_nvfuser):
    """A read of ``t1`` (a view of ``t0``) after ``t0`` is written is computed as the write's ops of the
    operands' views (functionalize.py, Note [a view of a value is computed from the view of its operands]).
    Through ``t0 > 0`` that view is bool: its proxy was float, so nvFuser got a float ``where`` condition
    (fuzz seed 20827 #43 on an H200); the stand-in casts outputs to the trace's dtype as the wrapper does."""
    jitted = fusion_alias.jit(_where_of_a_pushed_down_view, backend="reference")
    for seed in range(2):
        got, want, sj, se = _run_pair(
            _where_of_a_pushed_down_view, lambda x: (x.reshape(4, 1, 6), x[0]), jitted, shape=(4, 6), seed=seed, device="cpu"
        )
        _assert_same(got, want, sj, se)
    comparisons = [b for w in _wrappers(jitted) for b in w.spec.bsyms if b.sym.name == "gt"]
    from thunder.core import dtypes

    assert comparisons and all(b.output.dtype is dtypes.bool8 for b in comparisons)


def test_nvfuser_errors_fall_back_to_torch_on_fake_nvfuser(fake_nvfuser, monkeypatch):
    """Note [nvFuser errors fall back to torch]: an nvFuser error while running a definition whose
    write-backs the wrapper copies (nothing written yet) runs the region on torch, with a warning;
    one after an in-kernel write-back may have landed raises."""

    def explode(self, inputs, device=None, **options):
        raise RuntimeError(" INTERNAL ASSERT FAILED at loop_promotion.cpp:1308, please report a bug")

    monkeypatch.setattr(fake_nvfuser.FusionDefinition, "execute", explode)
    jitted = fusion_alias.jit(_write_column_read_base, backend="reference")
    with pytest.warns(UserWarning, match="nvFuser failed running .*INTERNAL ASSERT"):
        got, want, sj, se = _run_pair(_write_column_read_base, lambda x: (x, x[:, 1]), jitted, device="cpu")
    _assert_same(got, want, sj, se)
    assert all(w.on_torch for w in _wrappers(jitted))
    got, want, sj, se = _run_pair(_write_column_read_base, lambda x: (x, x[:, 1]), jitted, seed=1, device="cpu")
    _assert_same(got, want, sj, se)  # (the key stays on torch: no second warning needed)

    in_kernel = fusion_alias.jit(_sgd, backend="reference")
    with pytest.raises(RuntimeError, match="INTERNAL ASSERT"):
        in_kernel(torch.randn(4), torch.randn(4))
