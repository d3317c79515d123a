"""Session 33 trust probes: state a compiled program depends on, changed between calls.

Module hooks registered or removed after the first call were silently ignored (or kept running), and so
was a submodule replaced (``m.act = nn.Tanh()``, ``m.lin = nn.Linear(3, 3, bias=False)``, ``seq[1] = ...``,
a module in a global dict) or ``forward`` set on the module: Thunder's interpreter traces the hooks
``Module.__call__`` finds and the modules a parent holds, and nothing checked them at later calls (plain
``thunder.jit`` too). fusion_alias.jit now guards them (module_tables.py, Note [hooks added or removed
between calls], Note [a submodule replaced between calls])."""

import pytest
import torch
from torch import nn

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")


class _Sub(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([1.0, -2.0, 3.0, 0.5]), requires_grad=False)

    def forward(self, x):
        return x * self.w


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = _Sub()
        self.register_buffer("b", torch.tensor([0.25, 0.5, 1.0, 2.0]))

    def forward(self, x):
        x.add_(1)
        return self.sub(x) + self.b


def _steps_match_eager(steps, schedule):
    """Run ``steps`` (each ``"call"`` or a function of the module that changes it) on an eager module and on
    a jitted one; every call's output, written argument and buffer must be eager's."""
    m_e, m_j = _Net(), _Net()
    jitted = fusion_alias.jit(m_j, backend="reference", schedule=schedule)
    for step in steps:
        if step == "call":
            x_e, x_j = torch.arange(4.0), torch.arange(4.0)
            expected, got = m_e(x_e), jitted(x_j)
            torch.testing.assert_close(got, expected, rtol=0, atol=0)
            torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)
            torch.testing.assert_close(m_j.b, m_e.b, rtol=0, atol=0)
        else:
            step(m_e)
            step(m_j)
    return jitted


def _triple_input(mod, args):
    return (args[0] * 3,)


def _add_100(mod, args, out):
    return out + 100


def _double_input_in_place(mod, args):
    args[0].mul_(2)


def _bump_output_in_place(mod, args, out):
    out.add_(5)


def _minus_one_kwargs(mod, args, kwargs):
    return (args[0] - 1,), kwargs


_HOOKS = {
    "pre": lambda target: target.register_forward_pre_hook(_triple_input),
    "post": lambda target: target.register_forward_hook(_add_100),
    "pre_in_place": lambda target: target.register_forward_pre_hook(_double_input_in_place),
    "post_in_place": lambda target: target.register_forward_hook(_bump_output_in_place),
}


def _add(kind, where):
    def step(m):
        target = m if where == "root" else m.sub
        m._handles = [*getattr(m, "_handles", []), _HOOKS[kind](target)]
    return step


def _remove_last(m):
    m._handles.pop().remove()


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("where", ["root", "sub"])
@pytest.mark.parametrize("kind", sorted(_HOOKS))
def test_a_hook_added_after_the_first_call_runs_and_one_removed_stops(kind, where, schedule):
    jitted = _steps_match_eager(["call", _add(kind, where), "call", "call", _remove_last, "call"], schedule)
    assert jitted.compiled_structures <= 3  # (not one program a call)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_hook_removed_then_another_added_is_a_new_program(schedule):
    # one hook for another: the dict's length is the same, its key (the new handle's id) is not
    steps = [_add("pre", "sub"), "call", _remove_last, _add("post", "sub"), "call", "call", _remove_last,
             _add("pre", "sub"), "call"]
    _steps_match_eager(steps, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_hook_with_kwargs_added_to_a_submodule(schedule):
    def add(m):
        m._handles = [m.sub.register_forward_pre_hook(_minus_one_kwargs, with_kwargs=True)]
    _steps_match_eager(["call", add, "call", _remove_last, "call"], schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_global_module_hook_added_between_calls(schedule):
    handles = []

    def add(m):
        if not handles:  # (one global hook for both modules)
            handles.append(nn.modules.module.register_module_forward_hook(
                lambda mod, args, out: out * 2 if isinstance(mod, _Sub) else out))

    def remove(m):
        while handles:
            handles.pop().remove()

    try:
        _steps_match_eager(["call", add, "call", remove, "call"], schedule)
    finally:
        remove(None)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_function_calling_a_global_module_sees_its_new_hook(schedule):
    m_e, m_j = _Sub(), _Sub()
    mod = {"m": m_e}

    def f(x):
        return mod["m"](x) * 2

    jitted = fusion_alias.jit(f, backend="reference", schedule=schedule)
    for add_hook in (False, True, False):
        for m in (m_e, m_j):
            if add_hook:
                m._h = m.register_forward_hook(_add_100)
            elif hasattr(m, "_h"):
                m._h.remove()
        mod["m"] = m_e
        expected = f(torch.arange(4.0))
        mod["m"] = m_j
        torch.testing.assert_close(jitted(torch.arange(4.0)), expected, rtol=0, atol=0)


# Note [a submodule replaced between calls] (module_tables.py): which module a parent holds, which module a
# global holds, and an attribute set on a module that shadows its class's, changed between calls


class _Act(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.act = nn.ReLU()

    def forward(self, x):
        x.sub_(0.5)
        return self.act(self.lin(x))


def _same_seed_modules(make):
    torch.manual_seed(0)
    a = make()
    torch.manual_seed(0)
    return a, make()


def _swaps_match_eager(make, swaps, schedule):
    """Call an eager module and a jitted one once, then once after each of ``swaps`` (a function of the module
    and a seeded ``torch.manual_seed`` index, applied to both); outputs and written arguments must be eager's."""
    m_e, m_j = _same_seed_modules(make)
    jitted = fusion_alias.jit(m_j, backend="reference", schedule=schedule)
    for i, swap in enumerate([None, *swaps]):
        if swap is not None:
            for m in (m_e, m_j):
                torch.manual_seed(i)
                swap(m)
        x_e, x_j = torch.arange(3.0) - 1, torch.arange(3.0) - 1
        with torch.no_grad():
            expected, got = m_e(x_e), jitted(x_j)
        torch.testing.assert_close(got, expected)  # (Thunder's gelu, tanh round otherwise; a wrong module is far)
        torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)
    return jitted


def _set(name, make):
    def swap(m):
        setattr(m, name, make())
    return swap


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_activation_submodule_replaced_between_calls(schedule):
    # ReLU -> Tanh -> GELU -> GELU(tanh): the GELU's program checked ``approximate`` on the ReLU Thunder's
    # ThunderModule had cached (AttributeError); Tanh and the GELUs ran the ReLU's program (plain thunder.jit too)
    swaps = [_set("act", nn.Tanh), _set("act", nn.GELU), _set("act", lambda: nn.GELU(approximate="tanh")),
             _set("act", nn.ReLU)]
    _swaps_match_eager(_Act, swaps, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_layer_replaced_between_calls(schedule):
    swaps = [_set("lin", lambda: nn.Linear(3, 3, bias=False)),
             _set("lin", lambda: nn.Sequential(nn.Linear(3, 3), nn.Tanh())), _set("lin", lambda: nn.Linear(3, 3))]
    _swaps_match_eager(_Act, swaps, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_sequential_entry_replaced_and_one_appended_between_calls(schedule):
    def make():
        return nn.Sequential(nn.Linear(3, 3), nn.ReLU())

    def replace(m):
        m[1] = nn.Tanh()

    def append(m):
        m.append(nn.Sigmoid())

    m_e, m_j = _same_seed_modules(make)
    jitted = fusion_alias.jit(m_j, backend="reference", schedule=schedule)
    for swap in (None, replace, append):
        if swap is not None:
            swap(m_e)
            swap(m_j)
        x = torch.arange(3.0) - 1
        with torch.no_grad():
            torch.testing.assert_close(jitted(x), m_e(x))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_module_in_a_global_dict_replaced_between_calls(schedule):
    mods = {"m": nn.ReLU()}

    def f(x):
        x.sub_(1)
        return mods["m"](x) * 2

    jitted = fusion_alias.jit(f, backend="reference", schedule=schedule)
    for make in (nn.ReLU, nn.Tanh, nn.Sigmoid, nn.ReLU):
        mods["m"] = make()
        x_e, x_j = torch.arange(3.0), torch.arange(3.0)
        torch.testing.assert_close(jitted(x_j), f(x_e))
        torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_module_in_a_closure_rebound_between_calls(schedule):
    mod = nn.ReLU()

    def f(x):
        x.sub_(1)
        return mod(x) + 1

    jitted = fusion_alias.jit(f, backend="reference", schedule=schedule)
    for make in (nn.ReLU, nn.Tanh, lambda: nn.Sequential(nn.Tanh(), nn.ReLU())):
        mod = make()
        x_e, x_j = torch.arange(3.0), torch.arange(3.0)
        torch.testing.assert_close(jitted(x_j), f(x_e))
        torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_forward_set_on_the_module_between_calls(schedule):
    def forward_times_7(x):
        return x * 7

    def set_forward(m):
        m.forward = forward_times_7

    def del_forward(m):
        del m.forward

    jitted = _swaps_match_eager(_Act, [set_forward, del_forward], schedule)
    assert jitted.compiled_structures <= 3


def test_an_unchanged_module_tree_compiles_once():
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 3), nn.Tanh()))
    jitted = fusion_alias.jit(m, backend="reference")
    with torch.no_grad():
        for _ in range(4):
            jitted(torch.ones(3))
    assert jitted.compiled_structures == 1


# the modules generator's submodule form (fuzz/modules_hooks.py, Note [a submodule and its hooks, changed between
# calls]): the class above, in the fuzzer

# (seed, programs, grad) -> sha1 of the rendered modules programs with the form (session 33; without it, P_SUB 0,
# the streams are session 32's: tests/test_session32_generators.py, tests/test_session32_outside_generator.py)
SUB_STREAMS = {
    (33001, 40, False): "ed1ef8887577ff92dd267dba5184dbe3c5b207ea",
    (33002, 20, True): "28a2d7373737aa920b538fbc5c092fac31d05f3a",
}


def _module_programs(seed, n, grad=False):
    import warnings

    from fusion_alias.fuzz.generator import generate_program

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [generate_program(seed, i, generators=("modules",), grad=grad) for i in range(n)]


@pytest.fixture
def _no_special_values(monkeypatch):
    from fusion_alias.fuzz import source

    monkeypatch.setattr(source, "SPECIAL_VALUES", False)


@pytest.mark.parametrize("case", list(SUB_STREAMS), ids=lambda c: f"{c[0]}-grad{c[2]}")
def test_the_submodule_stream_is_pinned(case, _no_special_values, monkeypatch):
    import hashlib

    from fusion_alias.fuzz import modules_code, modules_hook_dicts, modules_process, modules_values, oracle

    monkeypatch.setattr(modules_process, "P_PROC", 0.0)  # (the process form: test_session33_process_generator.py)
    monkeypatch.setattr(modules_code, "P_CODE", 0.0)  # (session 34's code form: test_session34_code_changes.py)
    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)  # (session 35's forms: test_session35_module_forms.py)
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 0.0)
    from fusion_alias.fuzz import modules_view_rebinds

    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 0.0)  # (session 45's form: test_session45_view_rebind_form.py)
    h = hashlib.sha1()
    for p in _module_programs(*case):
        h.update(oracle.program_source(p).encode())
    assert h.hexdigest() == SUB_STREAMS[case]


def test_the_submodule_form_is_drawn_read_and_changed(_no_special_values):
    ps = _module_programs(33001, 40)
    holding = [p for p in ps if "self.sub = torch.nn.ReLU()" in dict(p.tags)["module_src"]]
    assert 2 <= len(holding) <= 10
    assert all("def _fa_pre(mod, args):" in dict(p.tags)["module_src"] for p in holding)
    assert any("m.sub(" in s.code for p in holding for s in p.stmts)
    changes = {st for p in holding for v in p.variants for st in v.state if st.startswith("m.sub")}
    assert any("register_forward" in st for st in changes) and any(" = torch.nn." in st for st in changes), changes
    assert not any("m.sub" in s.code for p in ps if p not in holding for s in p.stmts)


def test_the_fuzzer_runs_submodule_programs_against_fusion_alias(_no_special_values, monkeypatch):
    from fusion_alias import fuzz
    from fusion_alias.fuzz import modules_hooks

    monkeypatch.setattr(modules_hooks, "P_SUB", 1.0)
    report = fuzz.run_fuzz(seed=33003, only=[0, 1, 2], generators=("modules",), do_shrink=False)
    assert not report.failures, report.summary()
