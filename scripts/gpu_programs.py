"""Many programs on real nvFuser: seed, bench and fuzz programs, fusion_alias against eager, on CUDA.

Run by scripts/gpu_check.sh on a lent GPU machine (``--cpu-dry-run`` on CPU: the reference backend, to
check the plumbing). Each program's inputs are made on CPU by its own maker, then moved to the device
*with their aliasing*: every CPU storage becomes one device buffer and every argument the same view of
it (size, stride, offset), so ``(x, x[0, 0])`` stays two views of one buffer. Eager and fusion_alias
each get their own copy; outputs and every argument are compared after the first call and after a
second, cached, call on fresh copies. Programs eager rejects are skipped; refusals by fusion_alias
(a raise where eager returns) are counted, not failed; a result that differs from eager on the device
but equals eager on CPU is counted apart (eager's CUDA ``_foreach_*_`` kernels on a list that names one
tensor twice); any other wrong number is a failure, printed with the program's source.

    python scripts/gpu_programs.py --fuzz 200 --seed 20827 --budget 120 --out results.md
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
import traceback
import warnings

import torch
from torch.utils._pytree import tree_leaves

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def moved(args, device):
    """``args`` on ``device``, with the CPU aliasing kept: one buffer per storage, the same views of it."""
    buffers: dict[int, torch.Tensor] = {}

    def one(a):
        if not isinstance(a, torch.Tensor):
            return a
        storage = a.untyped_storage()
        key = storage.data_ptr()
        if key not in buffers:
            flat = torch.empty(0, dtype=torch.uint8).set_(storage).clone()  # the whole storage, as bytes
            buffers[key] = flat.to(device)
        raw = buffers[key]
        base = torch.empty(0, dtype=a.dtype, device=device).set_(raw.untyped_storage())
        out = base.as_strided(a.shape, a.stride(), a.storage_offset())
        return out.requires_grad_(a.requires_grad) if a.is_leaf and a.requires_grad else out

    return tuple(one(a) for a in args)


def _tensors(value):
    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def _close(got, want) -> str | None:
    g, w = _tensors(got), _tensors(want)
    if len(g) != len(w):
        return f"{len(g)} tensors, eager {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        try:
            torch.testing.assert_close(a.detach().cpu(), b.detach().cpu(), equal_nan=True, rtol=1e-4, atol=1e-5)
        except AssertionError as e:
            return f"tensor {i}: " + " ".join(str(e).split())[:300]
    return None


def check_program(fn, make_args, backend: str, device: str) -> tuple[str, str]:
    """(status, detail): ok, skipped (eager raised), refused (fusion_alias raised), wrong."""
    import fusion_alias

    jitted = fusion_alias.jit(fn, backend=backend)
    for call in range(2):
        cpu_args = make_args()
        if any(isinstance(a, torch.Tensor) and a.requires_grad for a in cpu_args):
            return "skipped", "inputs require grad"
        eager_args, jit_args, host_args = moved(cpu_args, device), moved(cpu_args, device), moved(cpu_args, "cpu")
        try:
            want = fn(*eager_args)
        except Exception as e:
            return "skipped", f"eager raised {type(e).__name__}"
        try:
            got = jitted(*jit_args)
        except Exception as e:
            return "refused", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        if device == "cuda":
            torch.cuda.synchronize()
        why = _close(got, want) or _close(jit_args, eager_args)
        if why:
            # Eager itself can differ between devices: CUDA's fused _foreach_*_ kernels do not
            # apply a list that names one tensor twice in order, as the CPU loop does.
            try:
                host_want = fn(*host_args)
            except Exception:
                host_want = None
            if host_want is not None and not (_close(got, host_want) or _close(jit_args, host_args)):
                return "eager-devices-differ", f"call {call + 1}: matches eager on CPU, not on {device}: {why}"
            return "wrong", f"call {call + 1}: {why}"
    return "ok", ""


def _source(fn) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        pass
    name = getattr(fn, "__code__", None) and fn.__code__.co_filename  # "<fuzz program seed S #I>"
    if name and name.startswith("<fuzz program"):
        from fusion_alias.fuzz import generate_program, program_source

        seed, index = name.split("seed ")[1].rstrip(">").split(" #")
        text = program_source(generate_program(int(seed), int(index)))
        return text[text.index("def prog") : text.index("def make_jit")].rstrip() + "\n"
    return "(source not available)\n"


def programs(n_fuzz: int, seed: int):
    from fusion_alias import nvfuser_check as nc

    return nc.seed_programs() + nc.bench_programs() + (nc.fuzz_programs(n_fuzz, seed) if n_fuzz else [])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fuzz", type=int, default=200, help="fuzz programs after the seed and bench ones")
    ap.add_argument("--seed", type=int, default=20827)
    ap.add_argument("--budget", type=float, default=120.0, help="stop starting programs after SEC")
    ap.add_argument("--out", default=None, help="append a markdown summary here")
    ap.add_argument("--cpu-dry-run", action="store_true", help="reference backend on CPU (plumbing only)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    device, backend = ("cpu", "reference") if args.cpu_dry_run else ("cuda", "nvfuser")
    start = time.perf_counter()
    counts = {"ok": 0, "skipped": 0, "refused": 0, "eager-devices-differ": 0, "wrong": 0, "crashed": 0}
    wrong, refused = [], []
    listed = programs(args.fuzz, args.seed)
    run = 0
    for name, fn, make_args in listed:
        if time.perf_counter() - start > args.budget:
            break
        run += 1
        try:
            status, detail = check_program(fn, make_args, backend, device)
        except Exception:
            status, detail = "crashed", traceback.format_exc().strip().splitlines()[-1]
        counts[status] += 1
        if status in ("wrong", "crashed"):
            source = _source(fn)
            wrong.append((name, status, detail, source))
            print(f"{status.upper()}: {name}: {detail}\n{source}", flush=True)
        elif status == "refused":
            refused.append((name, detail))
    took = time.perf_counter() - start
    summary = (
        f"{run} of {len(listed)} programs ({backend} on {device}, fuzz seed {args.seed}) in {took:.0f} s: "
        + ", ".join(f"{v} {k}" for k, v in counts.items())
    )
    print(summary)
    for name, detail in refused[:20]:
        print(f"  refused: {name}: {detail}")
    if args.out:
        with open(args.out, "a") as f:
            f.write(f"\n## Programs on {backend} ({device}): scripts/gpu_programs.py\n\n{summary}\n")
            for name, status, detail, source in wrong:
                f.write(f"\n**{status}: {name}**: {detail}\n```python\n{source}```\n")
            if refused:
                f.write("\nRefused (a raise where eager returns), first 20:\n")
                for name, detail in refused[:20]:
                    f.write(f"- {name}: {detail}\n")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
