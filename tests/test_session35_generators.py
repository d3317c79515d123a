"""Session 35 (helper): three generator forms, each drawn from a stream of its own (with its probability 0 every
program is the one it was; the older tests that pin the layout, calls and dtype streams set them so).

* the layout generator's kernel results written through a reshape (fuzz/kernel_layouts.py, Note [a kernel's
  result written through a reshape], ``P_KERNEL``): the class of eager_result_layouts.py;
* the calls generator's call orders that come back to an aliasing after others (fuzz/gen_aliasing.py, Note [calls
  that come back to an aliasing], ``P_REVISIT``);
* the dtype generator's in-place scan given its own dtype (fuzz/dtype_spellings.py, Note [an in-place scan given its
  own dtype in dtype programs], ``P_SCAN_DTYPE``);
* the hidden generator's numbers kept in a global list, a global dict or a default argument's dict, another on each
  call, sometimes changed by the function (fuzz/hidden_numbers.py, Note [a number kept outside the function, changed
  between calls], ``P_NUMBER``): the class of mutable_defaults.py.
"""

import hashlib
import re
import warnings

import pytest

from fusion_alias.fuzz import disjoint_views, foreach_functions  # (session 45's forms)
from fusion_alias.fuzz import dtype_rule_stmts  # (session 46's pow spellings)
from fusion_alias import fuzz
from fusion_alias.fuzz import dtype_spellings, fresh_memory_ops, gen_aliasing, hidden_numbers, kernel_layouts, oracle, source
from fusion_alias.fuzz.generator import generate_program
from number_forms import forms_off

# (generators, grad, seed, programs) -> sha1 of the rendered programs, the three forms at their default probabilities
STREAMS = {
    (("layout",), False, 35010, 30): "493a357b6f24dc601ace81dba4ee0e07ce5eda92",
    (("calls",), False, 35011, 30): "949257d09872a1ede56b082b9e5a090145197899",  # (13 programs come back)
    (("dtype",), False, 35012, 30): "32de23170e65d65198e22661e5eea7c41a2daf64",
    (("dtype",), True, 35013, 15): "128f176b869cb09b434325e58834ab5e194ecfe6",
    (("layout",), True, 35014, 15): "3141a3a3fa66fb5a8e8e57c6174515161d5e2707",
    (("hidden",), False, 35015, 30): "378e7e48268c76e63e6dba7fb79b55d7025ecd6e",  # (6 hold a number, 1 changes it)
    (("hidden",), True, 35016, 12): "8467b278f9e32ea6a611dd1777b913cfb2d57a21",  # (3)
}


@pytest.fixture(autouse=True)
def _no_special_values(monkeypatch):
    monkeypatch.setattr(source, "SPECIAL_VALUES", False)


def _programs(generators, seed, n, grad=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [generate_program(seed, i, generators=generators, grad=grad) for i in range(n)]


@pytest.mark.parametrize("case", list(STREAMS), ids=lambda c: f"{c[0][0]}-grad{c[1]}-{c[2]}")
def test_the_streams_are_pinned(case, monkeypatch):
    monkeypatch.setattr(hidden_numbers, "P_HELPER", 0.0)  # (session 36's forms: test_session36_*.py)
    monkeypatch.setattr(hidden_numbers, "P_ARRAY", 0.0)
    monkeypatch.setattr(hidden_numbers, "P_ITERATOR", 0.0)
    forms_off(monkeypatch)  # (the number forms since session 38: number_forms.py)
    monkeypatch.setattr(fresh_memory_ops, "P_FRESH", 0.0)  # (session 41: fresh_memory_ops.py)
    monkeypatch.setattr(foreach_functions, "P_FOREACH_FN", 0.0)  # (session 45's form: test_session45_foreach_function_form.py)
    monkeypatch.setattr(disjoint_views, "P_DISJOINT", 0.0)  # (session 45's form: test_session45_disjoint_views_form.py)
    monkeypatch.setattr(dtype_rule_stmts, "P_POW_SPELLING", 0.0)  # (session 46's pow spellings: test_session46_fuzz.py)
    generators, grad, seed, n = case
    h = hashlib.sha1()
    for p in _programs(generators, seed, n, grad):
        h.update(oracle.program_source(p).encode())
    assert h.hexdigest() == STREAMS[case]


_KERNEL_OPS = tuple(re.escape(op.split("{x}")[1 if op.startswith("{x}") else 0].split("(")[0]) for op, _ in
                    kernel_layouts._OPS)


def test_a_kernel_result_is_reshaped_and_returned(monkeypatch):
    monkeypatch.setattr(kernel_layouts, "P_KERNEL", 1.0)
    holding = 0
    for p in _programs(("layout",), 35001, 12):
        stmts = list(p.stmts)
        for i, s in enumerate(stmts[:-1]):
            nxt = stmts[i + 1]
            if s.target and nxt.view_of == s.target and re.match(rf"{nxt.target} = {s.target}\.(reshape|flatten|view)\(",
                                                                nxt.code):
                holding += 1
                assert s.target in p.returns and nxt.target in p.returns, (p.name, s.code)
    assert holding >= 8


def test_the_kernel_form_off_draws_nothing(monkeypatch):
    monkeypatch.setattr(kernel_layouts, "P_KERNEL", 0.0)
    for p in _programs(("layout",), 35010, 10):
        assert not any(".unsqueeze(0).permute(0, 3, 1, 2)" in s.code for s in p.stmts)


def test_call_orders_come_back_to_each_aliasing(monkeypatch):
    monkeypatch.setattr(gen_aliasing, "P_REVISIT", 1.0)
    monkeypatch.setattr(disjoint_views, "P_DISJOINT", 0.0)  # (session 45's form puts its call third: its own test)
    for p in _programs(("calls",), 35002, 10):
        order = p.calls
        assert 8 <= len(order) <= 13 and order[:2] == (0, 0) and order[-1] == 0, order
        assert set(order) == set(range(len(p.all_variants)))
        assert all(a != b for a, b in zip(order[1:], order[2:])), order
        assert len(order) > len(set(order)) + 2  # some aliasing comes back after others


def test_the_shrinker_renumbers_a_call_order():
    p = _programs(("calls",), 35011, 30)
    p = next(q for q in p if q.call_order and q.variants)
    q = fuzz.shrinker._without_variant(p, 0)
    assert len(q.variants) == len(p.variants) - 1
    assert 1 not in p.call_order or set(q.call_order) <= set(range(len(q.all_variants)))


def test_an_in_place_scan_keeps_its_own_dtype(monkeypatch):
    monkeypatch.setattr(dtype_spellings, "P_SCAN_DTYPE", 1.0)
    scans = [s.code for p in _programs(("dtype",), 35003, 20) for s in p.stmts if ".cumsum_(" in s.code]
    assert len(scans) >= 5
    assert all(re.search(r"\.cumsum_\((0|-1), dtype=torch\.\w+\)", c) for c in scans)


def test_a_hidden_number_changes_from_call_to_call(monkeypatch):
    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "P_HELPER", 0.0)  # (session 36's forms: test_session36_*.py)
    monkeypatch.setattr(hidden_numbers, "P_ARRAY", 0.0)
    monkeypatch.setattr(hidden_numbers, "P_ITERATOR", 0.0)
    forms_off(monkeypatch)  # (the number forms since session 38: number_forms.py)
    kinds, changed = set(), 0
    for p in _programs(("hidden",), 35050, 20):
        (kind,) = [k for h, k, _ in p.hidden if h == hidden_numbers.NAME]
        kinds.add(kind)
        values = [dict(v.hidden)[hidden_numbers.NAME] for v in p.all_variants]
        assert len(set(values)) == len(values), values
        src = oracle.program_source(p)
        assert f"    n0 = {hidden_numbers.access('n0', kind)}" in src and "t_n0 = " in src
        assert ("opts=DEFAULTS" in src) == (kind == "number_default")
        changed += any(s.must_refuse == hidden_numbers.CHANGED for s in p.stmts)
    assert kinds == set(hidden_numbers.KINDS) and changed >= 2


def test_the_number_form_off_draws_nothing(monkeypatch):
    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 0.0)
    assert not any(hidden_numbers.is_number(k) for p in _programs(("hidden",), 35015, 20) for _, k, _ in p.hidden)
