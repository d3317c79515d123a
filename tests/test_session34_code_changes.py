"""Session 34: code replaced between calls (object_shapes.py, Note [a function's code and defaults];
outside_reads.py, Note [the methods and the function called]).

A cached program kept running the code of its first compile after a function's ``__code__``, ``__defaults__``
or ``__kwdefaults__`` was replaced, or a method replaced on a class (``C.go = ...``, ``Net.forward = ...``):
silently wrong in fusion_alias and plain ``thunder.jit`` alike (session 33 probes). Each test compares with
eager on fresh inputs at every call, written inputs included, under both reference schedules.
"""

import functools
import types

import pytest
import thunder
import torch

import fusion_alias

SCHEDULES = ["reads-first", "writes-first"]


def _inputs():
    x = torch.arange(6.0).reshape(2, 3)
    return (x,)


def _check(make, schedule, changes):
    """``make()`` -> (callable, change functions by call index); eager and fusion_alias each get their own
    state from ``make``; outputs and the written input compared at every call."""
    eager_fn, eager_changes = make()
    jit_src, jit_changes = make()
    jitted = fusion_alias.jit(jit_src, backend="reference", schedule=schedule)
    for call in range(changes):
        if call in eager_changes:
            eager_changes[call]()
            jit_changes[call]()
        (xe,), (xj,) = _inputs(), _inputs()
        want = eager_fn(xe)
        got = jitted(xj)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(xj, xe)  # the written input
    return jitted


def _helper_code_replaced():
    def helper(x):
        return x.mul_(2)

    def other(x):
        return x.add_(100)

    def fn(x):
        return helper(x) + 1

    def change():
        helper.__code__ = other.__code__

    return fn, {1: change}


def _helper_defaults_replaced():
    def helper(x, k=2):
        return x.mul_(k)

    def fn(x):
        return helper(x) + 1

    def change():
        helper.__defaults__ = (5,)

    return fn, {1: change}


def _helper_kwdefaults_replaced():
    def helper(x, *, k=2):
        return x.mul_(k)

    def fn(x):
        return helper(x) + 1

    def change():
        helper.__kwdefaults__ = {"k": -3}

    return fn, {1: change}


def _method_replaced_on_class():
    class C:
        def go(self, x):
            return x.mul_(2)

    o = C()

    def fn(x):
        return o.go(x) + 1

    def change():
        C.go = lambda self, x: x.sub_(7)

    return fn, {1: change}


def _called_code_replaced():
    def fn(x):
        return x.mul_(2) * 3

    def change():
        fn.__code__ = (lambda x: x.sub_(7) * 3).__code__

    return fn, {1: change}


def _called_defaults_replaced():
    def fn(x, k=2):
        return x.mul_(k) + 1

    def change():
        fn.__defaults__ = (5,)

    return fn, {2: change}


def _forward_replaced_on_class():
    class Net(torch.nn.Module):
        def forward(self, x):
            return x.mul_(2) + 1

    m = Net()

    def change():
        Net.forward = lambda self, x: x.sub_(7) + 1

    return m, {1: change}


def _module_method_replaced_on_class():
    class Net(torch.nn.Module):
        def forward(self, x):
            return self.act(x) * 2

        def act(self, x):
            return x.add_(1)

    m = Net()

    def change():
        Net.act = lambda self, x: x.sub_(7)

    return m, {1: change}


def _staticmethod_replaced():
    class C:
        @staticmethod
        def go(x):
            return x.mul_(2)

    o = C()

    def fn(x):
        return o.go(x) + 1

    def change():
        C.go = staticmethod(lambda x: x.sub_(7))

    return fn, {1: change}


def _classmethod_replaced():
    class C:
        k = 2.0

        @classmethod
        def go(cls, x):
            return x.mul_(cls.k)

    o = C()

    def fn(x):
        return o.go(x) + 1

    def change():
        C.go = classmethod(lambda cls, x: x.sub_(7))

    return fn, {1: change}


def _call_replaced_on_class():
    class C:
        def __call__(self, x):
            return x.mul_(2)

    o = C()

    def fn(x):
        return o(x) + 1

    def change():
        C.__call__ = lambda self, x: x.sub_(7)

    return fn, {1: change}


def _method_replaced_on_base_class():
    class B:
        def go(self, x):
            return x.mul_(2)

    class C(B):
        pass

    o = C()

    def fn(x):
        return o.go(x) + 1

    def change():
        B.go = lambda self, x: x.sub_(7)

    return fn, {1: change}


def _class_of_object_swapped():
    class A:
        def go(self, x):
            return x.mul_(2)

    class B:
        def go(self, x):
            return x.sub_(7)

    o = A()

    def fn(x):
        return o.go(x) + 1

    def change():
        o.__class__ = B

    return fn, {1: change}


def _decorated_function_code_replaced():
    def inner(x):
        return x.mul_(2)

    @functools.wraps(inner)
    def wrapped(x):
        return inner(x) + 1

    def fn(x):
        return wrapped(x) * 2

    def change():
        inner.__code__ = (lambda x: x.sub_(7)).__code__

    return fn, {1: change}


def _torch_forward_replaced_on_class():
    class Lin(torch.nn.Linear):  # (a class of the test's own: replacing nn.Linear.forward would leak)
        pass

    torch.manual_seed(0)
    m = torch.nn.Sequential(Lin(3, 3), torch.nn.ReLU())

    def change():
        Lin.forward = lambda self, x: x.mul_(3) - 1

    return m, {1: change}


def _submodule_class_swapped():
    class A(torch.nn.Module):
        def forward(self, x):
            return x.mul_(2)

    class B(torch.nn.Module):
        def forward(self, x):
            return x.sub_(7)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = A()

        def forward(self, x):
            return self.sub(x) + 1

    m = Net()

    def change():
        m.sub.__class__ = B

    return m, {1: change}


def _instance_forward_method_replaced():
    class Net(torch.nn.Module):
        def forward(self, x):
            return x.mul_(2)

    m = Net()
    m.forward = types.MethodType(lambda self, x: x.add_(1), m)

    def change():
        m.forward = types.MethodType(lambda self, x: x.sub_(7), m)

    return m, {1: change}


CASES = {
    "helper code": _helper_code_replaced,
    "helper defaults": _helper_defaults_replaced,
    "helper keyword defaults": _helper_kwdefaults_replaced,
    "method on class": _method_replaced_on_class,
    "called code": _called_code_replaced,
    "called defaults": _called_defaults_replaced,
    "forward on class": _forward_replaced_on_class,
    "module method on class": _module_method_replaced_on_class,
    "staticmethod on class": _staticmethod_replaced,
    "classmethod on class": _classmethod_replaced,
    "__call__ on class": _call_replaced_on_class,
    "method on base class": _method_replaced_on_base_class,
    "__class__ swapped": _class_of_object_swapped,
    "decorated function's code": _decorated_function_code_replaced,
    "torch module's forward on class": _torch_forward_replaced_on_class,
    "submodule's __class__ swapped": _submodule_class_swapped,
    "instance forward method replaced": _instance_forward_method_replaced,
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_code_replaced_between_calls_runs_the_new_code(case, schedule):
    _check(CASES[case], schedule, changes=4)


@pytest.mark.parametrize("case", ["helper defaults", "called code", "method on class"])
def test_unchanged_code_compiles_once_and_a_change_once_more(case):
    fn, changes = CASES[case]()
    jitted = fusion_alias.jit(fn, backend="reference")
    for call in range(3):
        jitted(*_inputs())
    assert thunder.cache_misses(jitted) == 1
    changes[min(changes)]()
    for call in range(3):
        jitted(*_inputs())
    assert thunder.cache_misses(jitted) == 2


def test_a_method_set_on_the_instance_was_and_stays_right():
    """(Guarded before session 34: the object's attribute names changed.)"""

    def make():
        class C:
            def go(self, x):
                return x.mul_(2)

        o = C()

        def fn(x):
            return o.go(x) + 1

        def change():
            o.go = types.MethodType(lambda self, x: x.sub_(7), o)

        return fn, {1: change}

    _check(make, "reads-first", changes=3)


def test_torchs_own_methods_are_not_recorded():
    """``m.__call__.__func__``, ``m._call_impl.__func__`` and torch's modules' ``forward`` are torch's code,
    read at every module call: only the program's own classes' methods are guarded."""
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU(), torch.nn.Linear(3, 3))
    jitted = fusion_alias.jit(m, backend="reference")
    with torch.no_grad():
        x = torch.randn(2, 3)
        torch.testing.assert_close(jitted(x), m(x))
    for jfn in jitted._jitted:
        for entry in jfn._lc_cs.interpreter_cache:
            identity = getattr(entry.prologue_fn, "identity", None) or ()
            names = [r.inputs[1].value for r, _ in identity if r.inputs]
            assert "__func__" not in names, names


# the modules generator's code form (fuzz/modules_code.py, Note [code replaced between calls]): the class above, in
# the fuzzer. (seed, programs, grad) -> sha1 of the rendered modules programs, with the submodule and process forms
# off (their own tests pin them with this one off)
CODE_STREAMS = {(34003, 30, False): "83886af275788d090d81ec1824cbeec6c2052128"}


@pytest.fixture
def _only_the_code_form(monkeypatch):
    from fusion_alias.fuzz import modules_hook_dicts, modules_hooks, modules_process, modules_values, modules_view_rebinds, source

    monkeypatch.setattr(source, "SPECIAL_VALUES", False)
    monkeypatch.setattr(modules_hooks, "P_SUB", 0.0)
    monkeypatch.setattr(modules_process, "P_PROC", 0.0)
    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)  # (session 35's forms: test_session35_module_forms.py)
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 0.0)
    monkeypatch.setattr(modules_view_rebinds, "P_VIEW_REBIND", 0.0)  # (session 45's form: test_session45_view_rebind_form.py)


def _module_programs(seed, n, grad=False):
    import warnings

    from fusion_alias.fuzz.generator import generate_program

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [generate_program(seed, i, generators=("modules",), grad=grad) for i in range(n)]


@pytest.mark.parametrize("case", list(CODE_STREAMS), ids=lambda c: f"{c[0]}-grad{c[2]}")
def test_the_code_stream_is_pinned(case, _only_the_code_form):
    import hashlib

    from fusion_alias.fuzz import oracle

    h = hashlib.sha1()
    for p in _module_programs(*case):
        h.update(oracle.program_source(p).encode())
    assert h.hexdigest() == CODE_STREAMS[case]


def test_the_code_form_is_drawn_called_and_replaced(_only_the_code_form):
    ps = _module_programs(34003, 30)
    holding = [p for p in ps if "def _fa_gain(x, k=2.0):" in dict(p.tags)["module_src"]]
    assert 1 <= len(holding) <= 8, len(holding)
    assert all("self.fa = _FaAct()" in dict(p.tags)["module_src"] for p in holding)
    assert any(c in s.code for p in holding for s in p.stmts for c in ("_fa_gain(", "m.fa.go(", "m.fam("))
    changes = {st for p in holding for v in p.variants for st in v.state if st.startswith(("_fa_", "_Fa"))}
    assert changes, changes
    assert not any("_fa_gain(" in s.code or "m.fa.go(" in s.code for p in ps if p not in holding for s in p.stmts)


def test_the_fuzzer_runs_code_programs_against_fusion_alias(_only_the_code_form, monkeypatch):
    """Seed 34001 #12 and #13 with the form in every program: the two of its first 20 that mismatched on the code
    before the fix (b6e9b87: ``_fa_gain.__defaults__`` and ``_FaMod.forward`` replaced, the old program ran)."""
    from fusion_alias import fuzz
    from fusion_alias.fuzz import modules_code

    monkeypatch.setattr(modules_code, "P_CODE", 1.0)
    report = fuzz.run_fuzz(seed=34001, only=[12, 13], generators=("modules",), do_shrink=False)
    assert not report.failures, report.summary()
    assert not report.mismatches and report.ok >= 2, report.summary()
