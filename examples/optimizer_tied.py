"""An optimizer step over tied parameters: SGD with momentum and weight decay.

A language model ties its output projection to its token embedding: one
tensor, two entries in a hand-built parameter list (``[wte, lm_head, ...]``
where ``lm_head is wte``), each with its own gradient and momentum buffer.
Eager PyTorch updates the shared weight twice, the second update reading the
result of the first. A second tie is a view: the positional table is a slice
of one flat parameter store that a bias lives in too (``store[:T * D]`` and
``store[T * D:]``, disjoint: no hazard between them).

    python examples/optimizer_tied.py
"""

from _compare import compare

import torch

V, D, T = 12, 8, 4
LR, MOMENTUM, WEIGHT_DECAY = 0.1, 0.9, 0.01


def sgd_momentum_step(params, grads, bufs):
    for p, g, buf in zip(params, grads, bufs):
        g = g.add(p, alpha=WEIGHT_DECAY)
        buf.mul_(MOMENTUM).add_(g)
        p.add_(buf, alpha=-LR)
    return params


def tied_inputs():
    gen = torch.Generator().manual_seed(0)
    wte = torch.randn(V, D, generator=gen)
    store = torch.randn(T * D + D, generator=gen)  # flat store: positional table, then a bias
    wpe, bias = store[: T * D].view(T, D), store[T * D :]
    params = [wte, wte, wpe, bias]  # lm_head is wte: tied
    grads = [torch.randn(p.shape, generator=gen) for p in params]
    bufs = [torch.randn(p.shape, generator=gen) for p in params]
    return params, grads, bufs


def untied_inputs():
    params, grads, bufs = tied_inputs()
    params = [p.clone() for p in params]  # every parameter its own memory
    return params, grads, bufs


if __name__ == "__main__":
    tied = compare("SGD + momentum + weight decay, lm_head tied to wte (same tensor twice), wpe/bias slices of one "
                   "store", sgd_momentum_step, tied_inputs)
    untied = compare("the same step, no parameter shares memory", sgd_momentum_step, untied_inputs,
                     definitions=False)
    print("=" * 78)
    print(f"regions: tied {tied}, untied {untied}")
