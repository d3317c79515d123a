"""One decode step of attention with a KV cache.

The new token's key and value are written into the caches at position
``POS``, then the query attends over positions ``0..POS``. As in many
implementations, the key and value caches are the two halves of one buffer
(``kv[0]``, ``kv[1]``): disjoint, so writing one must not cut the other's read.
The second program scales the cached keys in place (a rotary-style update of
the window read next): a write followed by reads of the memory it wrote.

    python examples/kv_cache_decode.py
"""

from _compare import compare

import torch

B, T, D, POS = 2, 8, 16, 5
SCALE = D**-0.5


def decode_step(k_cache, v_cache, x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv  # (B, D) each
    k_cache[:, POS] = k
    v_cache[:, POS] = v
    keys, values = k_cache[:, : POS + 1], v_cache[:, : POS + 1]  # (B, POS + 1, D)
    scores = (keys * q.unsqueeze(1)).sum(-1) * SCALE
    attn = scores.softmax(-1)
    return (attn.unsqueeze(-1) * values).sum(1)


def decode_step_rescaled(k_cache, v_cache, x, wq, wk, wv):
    out = decode_step(k_cache, v_cache, x, wq, wk, wv)
    k_cache[:, : POS + 1].mul_(0.5)  # rescale the window in place, then read it again
    again = (k_cache[:, : POS + 1] * out.unsqueeze(1)).sum(-1)
    return out, again


def inputs():
    gen = torch.Generator().manual_seed(0)
    kv = torch.randn(2, B, T, D, generator=gen)  # one buffer: keys, then values
    x = torch.randn(B, D, generator=gen)
    ws = [torch.randn(D, D, generator=gen) * SCALE for _ in range(3)]
    return (kv[0], kv[1], x, *ws)


if __name__ == "__main__":
    one = compare("KV-cache decode step: write k, v at POS, attend over 0..POS (k/v caches: halves of one buffer)",
                  decode_step, inputs)
    two = compare("... then rescale the cached keys in place and read them again", decode_step_rescaled, inputs)
    print("=" * 78)
    print(f"regions: decode step {one}, with the in-place rescale {two}")
