#!/usr/bin/python3
"""The study's training step in PyTorch, for comparing with posenc on the same machine.

    /usr/bin/python3 bench/pytorch_baseline.py [--policies rope,alibi,...] [--threads 1,2] [--steps 10]
                                               [--repeats 3] [--blas-threads N] [--precision fp32|bf16]
    /usr/bin/python3 bench/pytorch_baseline.py --rss-steps 1000 --policies rope --threads 2

The model is posenc's (tools/posenc_torch.py describes the same one, forward only): token
embedding (+ a learned or sinusoidal table), 3 pre-LayerNorm blocks (Dim 192, 4 heads, causal
attention with the policy's RoPE rotation or ALiBi bias, MLP 192 → 768 → 192 with tanh-GELU),
final LayerNorm, untied lm_head with bias, nanoGPT's initialisation; one step is zero_grad,
forward, cross-entropy, backward and torch.optim.AdamW (lr 1e-3, weight decay 0.01) at
B = 32, T = 128, V = 65. Prints one JSON object per (policy, threads) with the tokens/s of the
fastest of --repeats blocks of --steps steps (after 3 warm-up steps), and with --rss-steps the peak
resident memory (ru_maxrss) after that many steps. --precision bf16 runs the forward and the loss
under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's own mixed precision (fp32 weights and
optimizer, bf16 matmuls). torch.set_num_threads sets PyTorch's OpenMP
threads; Debian's torch calls OpenBLAS for its GEMMs, whose own threads --blas-threads sets
(OPENBLAS_NUM_THREADS, before torch loads); OMP_WAIT_POLICY in the environment also matters. Needs Debian's
python3-torch (scripts/install-deps.sh --bench), hence /usr/bin/python3.
"""
import argparse
import json
import math
import resource
import sys
import os
import time


def _blas_threads_from_argv():
    """OpenBLAS reads its thread count when it loads, so --blas-threads is applied before torch."""
    for i, arg in enumerate(sys.argv):
        if arg == "--blas-threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--blas-threads="):
            return arg.split("=", 1)[1]
    return None


if _blas_threads_from_argv():
    os.environ["OPENBLAS_NUM_THREADS"] = _blas_threads_from_argv()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

POLICIES = ["nope", "learned", "sinusoidal", "rope", "alibi", "alibi-single"]


def alibi_slopes(heads):
    p = 2 ** int(math.floor(math.log2(heads)))
    slopes = [2.0 ** (-8.0 * (h + 1) / p) for h in range(p)]
    if p < heads:
        slopes += alibi_slopes(2 * p)[0::2][: heads - p]
    return slopes


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(dim)
        self.c_attn = torch.nn.Linear(dim, 3 * dim)
        self.c_proj = torch.nn.Linear(dim, dim)
        self.ln_2 = torch.nn.LayerNorm(dim)
        self.c_fc = torch.nn.Linear(dim, 4 * dim)
        self.mlp_proj = torch.nn.Linear(4 * dim, dim)

    def forward(self, x, rotate, bias, mask):
        B, T, D = x.shape
        H, hd = self.heads, D // self.heads
        q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in self.c_attn(self.ln_1(x)).split(D, dim=2))
        if rotate is not None:
            q, k = rotate(q), rotate(k)
        scores = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(hd))
        if bias is not None:
            scores = scores + bias
        att = scores.masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).reshape(B, T, D))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Model(torch.nn.Module):
    def __init__(self, policy, vocab=65, context=128, layers=3, dim=192, heads=4):
        super().__init__()
        self.policy, self.dim, self.heads = policy, dim, heads
        self.wte = torch.nn.Embedding(vocab, dim)
        self.wpe = torch.nn.Embedding(context, dim) if policy == "learned" else None
        self.h = torch.nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(dim)
        self.lm_head = torch.nn.Linear(dim, vocab)
        for name, p in self.named_parameters():  # posenc's (nanoGPT's) initialisation
            if name.endswith("bias"):
                torch.nn.init.zeros_(p)
            elif "ln" in name:
                torch.nn.init.ones_(p)
            else:
                torch.nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx):
        B, T = idx.shape
        D, H = self.dim, self.heads
        hd = D // H
        x = self.wte(idx)
        pos = torch.arange(T, dtype=torch.float64)
        if self.policy == "learned":
            x = x + self.wpe.weight[:T]
        elif self.policy == "sinusoidal":
            i = torch.arange(D)
            angle = pos[:, None] * torch.pow(10000.0, -(i // 2 * 2).double() / D)[None, :]
            x = x + torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle)).float()
        rotate = bias = None
        if self.policy == "rope":
            inv_freq = torch.pow(10000.0, -2.0 * torch.arange(hd // 2).double() / hd)
            angle = pos[:, None] * inv_freq[None, :]
            cos = torch.cat([angle.cos(), angle.cos()], -1).float()
            sin = torch.cat([angle.sin(), angle.sin()], -1).float()

            def rotate(v):  # rotate-half pairing, as posenc's RoPE
                return v * cos + torch.cat([-v[..., hd // 2 :], v[..., : hd // 2]], -1) * sin

        elif self.policy in ("alibi", "alibi-single"):
            slopes = alibi_slopes(H) if self.policy == "alibi" else [2.0 ** (-8.0 / H)] * H
            bias = -torch.tensor(slopes)[:, None, None] * (pos[:, None] - pos[None, :]).float()[None]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        for block in self.h:
            x = block(x, rotate, bias, mask)
        return self.lm_head(self.ln_f(x))


def make_step(policy, batch, context, precision="fp32", seed=1337):
    torch.manual_seed(seed)
    model = Model(policy, context=context)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 65, (batch, context), generator=g)
    y = torch.randint(0, 65, (batch, context), generator=g)

    def step():
        optimizer.zero_grad(set_to_none=False)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--threads", default="1,2", help="thread counts to try (torch.set_num_threads)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per block, after 3 warm-up steps")
    parser.add_argument("--repeats", type=int, default=3, help="timed blocks; the fastest is reported")
    parser.add_argument("--blas-threads", default=None, help="OPENBLAS_NUM_THREADS (default: OpenBLAS's own)")
    parser.add_argument("--rss-steps", type=int, default=0, help="run this many steps and report peak RSS")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="bf16: torch.autocast on the CPU with bfloat16")
    args = parser.parse_args()
    for policy in args.policies.split(","):
        if policy not in POLICIES:
            sys.exit(f"pytorch_baseline.py: unknown policy '{policy}' (expected one of {', '.join(POLICIES)})")
        for threads in (int(t) for t in args.threads.split(",")):
            torch.set_num_threads(threads)
            step = make_step(policy, args.batch, args.context, args.precision)
            if args.rss_steps:
                t0 = time.perf_counter()
                for _ in range(args.rss_steps):
                    loss = step()
                steps, seconds = args.rss_steps, time.perf_counter() - t0
            else:
                for _ in range(3):
                    step()
                blocks = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    for _ in range(args.steps):
                        loss = step()
                    blocks.append(time.perf_counter() - t0)
                steps, seconds = args.steps, min(blocks)
            result = {
                "policy": policy,
                "threads": threads,
                "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
                "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
                "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", "default"),
                "precision": args.precision,
                "steps": steps,
                "seconds_per_step": seconds / steps,
                "tokens_per_second": args.batch * args.context * steps / seconds,
                "loss": loss,
                "torch": torch.__version__,
            }
            if args.rss_steps:
                result["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
