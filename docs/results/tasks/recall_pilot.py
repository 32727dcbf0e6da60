#!/usr/bin/env python3
"""Associative recall in a plain PyTorch GPT: is posenc's plateau the task's or posenc's?

    /usr/bin/python3 docs/results/tasks/recall_pilot.py [--pairs 1-8] [--key-letters 1] [--queries all] \
        [--values ABCDEFGHIJKLMNOPQRSTUVWXYZ] [--previous-token-head] [--no-mlp] [--steps 5000] ...

Trains a small pre-LayerNorm GPT (posenc's small model: 2 layers, dim 64, 4 heads, tanh-GELU MLP,
learned positions or RoPE; AdamW, lr 1e-3, 500 warm-up steps, cosine to 0.1, batch 32, loss on the
answers only) on posenc's associative-recall layout: key-value pairs (keys of --key-letters letters,
values one of --values), '|', then --queries of the keys each followed by its value. Every 1,000
steps it prints the smoothed answer loss and the exact match (every answer of an example right) at
1-8 pairs, 256 examples each. --previous-token-head replaces the first layer's attention by a fixed
one that reads the previous position (what an induction head's first half learns), to tell whether
finding that head is what the model lacks. Shares no code with posenc; one thread; needs Debian's
python3-torch. A diagnostic for docs/results.md, not a study: one seed a setting.
"""
import argparse
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

LETTERS = "abcdefghijklmnopqrstuvwxyz"
parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--steps", type=int, default=5000)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--pairs", default="1-8", help="trained numbers of pairs, A-B")
parser.add_argument("--key-letters", type=int, default=2, help="letters a key has (posenc: 2)")
parser.add_argument("--queries", default="4", help="keys asked an example: a number or 'all' (posenc: 4)")
parser.add_argument("--values", default="0123456789", help="the symbols a value is drawn from (posenc: digits)")
parser.add_argument("--positions", choices=["learned", "rope"], default="learned")
parser.add_argument("--previous-token-head", action="store_true")
parser.add_argument("--no-mlp", action="store_true", help="attention-only blocks")
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--batch", type=int, default=32)
args = parser.parse_args()
torch.set_num_threads(1)
random.seed(args.seed)
torch.manual_seed(args.seed)
lo, hi = map(int, args.pairs.split("-"))
dim, heads, layers, warmup = 64, 4, 2, 500
vocab = sorted(set(LETTERS + args.values + "|"))
token = {c: i for i, c in enumerate(vocab)}


def example(n):
    """An example of n pairs: its text and, per character, whether it is an answer."""
    keys = random.sample(range(26**args.key_letters), n)

    def key(k):
        return "".join(LETTERS[(k // 26**j) % 26] for j in reversed(range(args.key_letters)))

    values = [random.choice(args.values) for _ in range(n)]
    text = "".join(key(k) + v for k, v in zip(keys, values)) + "|"
    answer = [0] * len(text)
    for q in random.sample(range(n), n if args.queries == "all" else min(n, int(args.queries))):
        text += key(keys[q]) + values[q]
        answer += [0] * args.key_letters + [1]
    return text, answer


def batch(size, pairs):
    """Inputs, targets and the answer mask (size, T) of `size` examples, padded as posenc pads."""
    examples = [example(pairs()) for _ in range(size)]
    T = max(len(text) for text, _ in examples) - 1
    x, y, mask = torch.zeros(size, T, dtype=torch.long), torch.zeros(size, T, dtype=torch.long), torch.zeros(size, T)
    for b, (text, answer) in enumerate(examples):
        ids = [token[c] for c in text]
        for i in range(len(ids) - 1):
            x[b, i], y[b, i], mask[b, i] = ids[i], ids[i + 1], answer[i + 1]
    return x, y, mask


def rotate(v):  # RoPE, halves layout, base 10000
    T, d = v.shape[-2], v.shape[-1]
    angle = torch.arange(T).float()[:, None] * (10000 ** (-torch.arange(0, d, 2).float() / d))[None]
    cos, sin = angle.cos(), angle.sin()
    a, b = v[..., : d // 2], v[..., d // 2 :]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)


class Block(nn.Module):
    def __init__(self, first):
        super().__init__()
        self.first = first
        self.ln1, self.qkv, self.proj = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.ln2, self.fc, self.out = nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(C, -1))
        if args.positions == "rope":
            q, k = rotate(q), rotate(k)
        if self.first and args.previous_token_head:
            previous = torch.zeros(T, T)
            previous[torch.arange(1, T), torch.arange(T - 1)] = 1
            previous[0, 0] = 1
            y = previous @ v
        else:
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(C // heads)
            y = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf")).softmax(-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x if args.no_mlp else x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(len(vocab), dim), nn.Embedding(200, dim)
        self.blocks = nn.ModuleList(Block(first=i == 0) for i in range(layers))
        self.lnf, self.head = nn.LayerNorm(dim), nn.Linear(dim, len(vocab))
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0, 0.02)

    def forward(self, x):
        h = self.tok(x) + (self.pos(torch.arange(x.shape[1])) if args.positions == "learned" else 0)
        for block in self.blocks:
            h = block(h)
        return self.head(self.lnf(h))


def learning_rate(step):
    if step < warmup:
        return args.lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, args.steps - warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def exact_match(n):
    random.seed(10_000 + n)
    with torch.no_grad():
        x, y, mask = batch(256, lambda: n)
        return ((model(x).argmax(-1) == y) | (mask == 0)).all(-1).float().mean().item()


model = GPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
start, smoothed = time.time(), 0.0
for step in range(args.steps):
    for group in optimizer.param_groups:
        group["lr"] = learning_rate(step)
    x, y, mask = batch(args.batch, lambda: random.randint(lo, hi))
    loss = (F.cross_entropy(model(x).flatten(0, 1), y.flatten(), reduction="none") * mask.flatten()).sum() / mask.sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    smoothed = 0.98 * smoothed + 0.02 * loss.item()
    if (step + 1) % 1000 == 0:
        state = random.getstate()
        exact = [exact_match(n) for n in range(1, 9)]
        random.setstate(state)
        print(f"step {step + 1} loss {smoothed:.3f} exact by pairs 1-8: " + " ".join(f"{a:.2f}" for a in exact)
              + f" ({time.time() - start:.0f} s)", flush=True)
