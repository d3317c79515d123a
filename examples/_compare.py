"""What every example prints: fusion_alias next to eager PyTorch and plain Thunder.

For one program and an input maker (fresh, equal tensors on every call):

* eager PyTorch runs it: the reference (outputs and every input after the call);
* ``fusion_alias.jit`` runs it under both reference schedules, first and cached
  call; each must equal eager (asserted: the example fails loudly otherwise);
  it prints the regions with their cut reasons (``FUSION_ALIAS_LOG=regions``'s
  text) and each region's fusion definition;
* plain ``thunder.jit`` runs it too: matches eager, gives a different result, or
  raises (printed, not asserted: that is Thunder's behaviour, not ours). Its
  region count is the one nvFuser would get from Thunder 0.2.6's alias pass and
  grouping (``fusion_alias.bench.regions.thunder_regions``, as in the benchmark):
  on a CPU, plain Thunder fuses nothing.
"""

from __future__ import annotations

import os
import sys
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import fusion_alias  # noqa: E402
from fusion_alias.backends.reference import SCHEDULES  # noqa: E402


def _flat(x) -> list:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [y for z in x for y in _flat(z)]
    if isinstance(x, dict):
        return [y for z in x.values() for y in _flat(z)]
    return []


def differences(got, expected, args, eager_args) -> list[str]:
    """What differs from eager: outputs by position, then inputs by position (empty: all equal)."""
    out = []
    g, e = _flat(got), _flat(expected)
    if len(g) != len(e):
        return [f"{len(g)} outputs, eager has {len(e)}"]
    for i, (a, b) in enumerate(zip(g, e)):
        if a.shape != b.shape or not torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
            out.append(f"output {i}")
    for i, (a, b) in enumerate(zip(_flat(args), _flat(eager_args))):
        if a.shape != b.shape or not torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
            out.append(f"input tensor {i} after the call")
    return out


def _thunder_estimate(fn, jitted, make_inputs) -> str:
    from thunder.core.pytree import tree_flatten

    from fusion_alias.bench import regions as bench

    flat_args, _ = tree_flatten((make_inputs(), {}))
    consecutive, _, error, racy = bench.thunder_regions(
        bench._pre_alias_trace(jitted), bench._thunder_alias_indices(flat_args)
    )
    if consecutive == "error":
        return f"its alias pass raises ({error})"
    extra = f", {racy} of them with an alias hazard inside (wrong on nvFuser)" if racy else ""
    return f"{consecutive} regions{extra}"


def compare(title: str, fn, make_inputs, *, definitions: bool = True) -> int:
    """Run ``fn`` every way, print, assert fusion_alias equals eager; return fusion_alias's region count."""
    import thunder

    from fusion_alias.log import format_report
    from fusion_alias.report import kept_report

    print("=" * 78)
    print(title)
    eager_args = make_inputs()
    expected = fn(*eager_args)

    counts = {}
    jitted = None
    for schedule in SCHEDULES:
        jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
        for call in ("first", "cached"):
            args = make_inputs()
            got = jitted(*args)
            diff = differences(got, expected, args, eager_args)
            assert not diff, f"fusion_alias ({schedule}, {call} call) differs from eager: {', '.join(diff)}"
        counts[schedule] = len(fusion_alias.regions(jitted))
    assert len(set(counts.values())) == 1, counts
    n = counts[SCHEDULES[0]]
    print(f"fusion_alias: matches eager (outputs and inputs; schedules {', '.join(SCHEDULES)}; first and cached call)")
    report = kept_report(thunder.last_traces(jitted))
    if report is not None:
        print(format_report(report))

    try:
        plain = thunder.jit(fn)
        args = make_inputs()
        got = plain(*args)
        diff = differences(got, expected, args, eager_args)
        verdict = "matches eager" if not diff else f"DIFFERS from eager ({', '.join(diff)})"
    except Exception as e:  # Thunder's behaviour, printed
        verdict = f"raises {type(e).__name__}: {str(e).splitlines()[0][:150]}"
    try:
        estimate = _thunder_estimate(fn, jitted, make_inputs)
    except Exception as e:
        estimate = f"n/a ({type(e).__name__})"
    print(f"plain thunder.jit: {verdict}")
    print(f"regions: fusion_alias {n}; Thunder 0.2.6 with nvFuser: {estimate}")

    if definitions:
        for b in fusion_alias.regions(jitted):
            print(repr(b._call_ctx[b.sym.name]))
    return n
