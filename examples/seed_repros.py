"""The seed repros of the original bug report, run through fusion_alias.

For each program: does fusion_alias match eager PyTorch (outputs and every
mutated input) under every reference schedule, how many fusion regions it
uses, and each region's fusion definition with its alias groups.

    ./scripts/demo.sh            # or: python examples/seed_repros.py
"""

import os
import sys
import warnings

warnings.filterwarnings("ignore")
_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [os.path.join(_ROOT, "tests"), _ROOT]  # runs from any directory, without an install

import torch  # noqa: E402

import fusion_alias  # noqa: E402
from fusion_alias.backends.reference import SCHEDULES  # noqa: E402
from programs import SEED_PROGRAMS  # noqa: E402


def run(fn, make_inputs, schedule):
    base = torch.randn(5, 5, generator=torch.Generator().manual_seed(0))
    b_eager, b_jit = base.clone(), base.clone()
    args_eager, args_jit = make_inputs(b_eager), make_inputs(b_jit)
    expected = fn(*args_eager)
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    got = jitted(*args_jit)
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    same = all(torch.allclose(g, e) for g, e in zip(got, expected))
    same = same and torch.allclose(b_jit, b_eager)
    same = same and all(torch.allclose(a, b) for a, b in zip(args_jit, args_eager))
    return jitted, same


def main():
    import inspect

    all_ok = True
    summary = []
    for fn, make_inputs, bound in SEED_PROGRAMS:
        results = {s: run(fn, make_inputs, s) for s in SCHEDULES}
        jitted = results["reads-first"][0]
        n = len(fusion_alias.regions(jitted))
        ok = all(same for _, same in results.values()) and n <= bound
        all_ok &= ok
        inputs = "(x, x[0, 0])" if make_inputs.__name__ == "aliased_inputs" else "(x, y) independent"
        print("=" * 78)
        print(inspect.getsource(fn).rstrip())
        print(f"# inputs {inputs}")
        for s, (_, same) in results.items():
            print(f"# {s:14s}: {'matches eager' if same else 'WRONG RESULT'}")
        print(f"# regions: {n} (bound {bound})")
        for b in fusion_alias.regions(jitted):
            print(repr(b._call_ctx[b.sym.name]))
        summary.append((fn.__name__, n, bound, ok))
    print("=" * 78)
    print(f"{'program':24s} regions  bound  result")
    for name, n, bound, ok in summary:
        print(f"{name:24s} {n:7d} {bound:6d}  {'ok' if ok else 'FAIL'}")
    print("all seed programs match eager PyTorch under every reference schedule" if all_ok else "SOME PROGRAMS FAILED")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
