#!/usr/bin/env python3
"""posenc's model in PyTorch: loads a posenc checkpoint and scores text with it.

    python3 tools/posenc_torch.py CHECKPOINT DATA [--context N] [--rope-scaling METHOD --rope-factor S ...]
    python3 tools/posenc_torch.py --batch FILE

prints the checkpoint's train and validation loss over non-overlapping windows, the same protocol
as `shakespeare eval`, so the two can be compared, as one JSON line with each split's bits per
byte. The corpus's bytes are cut at 90% and each part encoded on its own with the checkpoint's
tokenizer (metadata "tokenizer": char, byte or bpe, whose pre-split and merge order are written
again here from their rules). A checkpoint trained at randomized positions (Ruoss et al. 2023;
metadata "position_range") reads each batch of windows at the positions posenc draws for it: an
ordered subset of the range by selection sampling, from a 64-bit Mersenne Twister keyed by the
batch's tokens, written out again here. With --batch, each line of FILE holds the arguments of one
such evaluation, and each gets its JSON line, in one process (so PyTorch, which takes seconds to
import, starts once). The model here is written from posenc's definition (pre-LayerNorm blocks,
tanh-GELU MLP, lm_head with bias, its weight the token table's when the checkpoint says
tie_weights, as nanoGPT ties them) and each positional encoding's formula; it shares no code
with posenc. Needs PyTorch (Debian's python3-torch).
"""
import argparse
import json
import math
import re
import shlex
import struct
import sys

import torch
import torch.nn.functional as F


def load_safetensors(path):
    """A safetensors file as ({name: tensor}, metadata), with nothing but the standard library."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    metadata = header.pop("__metadata__", {})
    body = memoryview(raw)[8 + n :]
    tensors = {}
    for name, entry in header.items():
        assert entry["dtype"] == "F32", f"{name}: dtype {entry['dtype']}"
        begin, end = entry["data_offsets"]
        tensors[name] = torch.frombuffer(bytearray(body[begin:end]), dtype=torch.float32).reshape(entry["shape"])
    return tensors, metadata


MASK64 = (1 << 64) - 1


def mix(x):
    """splitmix64's finaliser."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


class MersenneTwister64:
    """std::mt19937_64 (Matsumoto and Nishimura's MT19937-64), seeded as its constructor seeds it."""

    def __init__(self, seed):
        self.state = [seed & MASK64]
        for i in range(1, 312):
            previous = self.state[-1]
            self.state.append((6364136223846793005 * (previous ^ (previous >> 62)) + i) & MASK64)
        self.index = 312

    def next(self):
        if self.index == 312:
            upper, lower = 0xFFFFFFFF80000000, 0x7FFFFFFF
            for i in range(312):
                x = (self.state[i] & upper) | (self.state[(i + 1) % 312] & lower)
                shifted = x >> 1
                if x & 1:
                    shifted ^= 0xB5026F5AA96619E9
                self.state[i] = self.state[(i + 156) % 312] ^ shifted
            self.index = 0
        y = self.state[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK64

    def uniform_index(self, n):  # rejection sampling, without modulo bias
        limit = MASK64 - MASK64 % n
        draw = self.next()
        while draw >= limit:
            draw = self.next()
        return draw % n


def draw_positions_for(ids, count, position_range):
    """The positions posenc reads a batch of token ids (row by row) at: `count` of the range, in
    order, each subset equally likely (selection sampling), keyed by the ids."""
    key = mix(len(ids))
    for i in ids:
        key = mix(key ^ i)
    rng, positions = MersenneTwister64(key), []
    for p in range(position_range):
        if len(positions) == count:
            break
        if rng.uniform_index(position_range - p) < count - len(positions):
            positions.append(p)
    return positions


# GPT-2's pre-split ('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+) on
# bytes, as posenc reads it without Unicode's tables: a letter is an ASCII letter or any byte ≥ 0x80
# (a UTF-8 character never splits), a digit 0-9, whitespace space, \t, \n, \v, \f and \r.
LETTER, DIGIT, SPACE = rb"A-Za-z\x80-\xff", rb"0-9", rb" \t\n\x0b\x0c\r"
BPE_CHUNK = re.compile(rb"'(?:s|t|re|ve|m|ll|d)| ?[%s]+| ?[%s]+| ?[^%s%s%s]+|[%s]+(?![^%s])|[%s]+"
                       % (LETTER, DIGIT, LETTER, DIGIT, SPACE, SPACE, SPACE, SPACE))


class Tokenizer:
    """A checkpoint's tokens: char (metadata "vocab", the corpus's bytes, token id = index; the only
    kind before BPE, so a checkpoint without "tokenizer" has it), byte (the 256 bytes) or bpe
    (byte-level BPE: token 256 + i joins the pair merges[i])."""

    def __init__(self, meta):
        self.kind = meta.get("tokenizer", "char")
        if self.kind == "char":
            self.pieces = [bytes([b]) for b in json.loads(meta["vocab"])]
            self.ids = {p[0]: i for i, p in enumerate(self.pieces)}
            return
        assert self.kind in ("byte", "bpe"), f"tokenizer {self.kind}"
        merges = [tuple(pair) for pair in json.loads(meta["merges"])]
        assert (self.kind == "byte") == (not merges), f"tokenizer {self.kind} with {len(merges)} merges"
        self.pieces = [bytes([b]) for b in range(256)]
        for left, right in merges:
            self.pieces.append(self.pieces[left] + self.pieces[right])
        self.rank = {pair: 256 + i for i, pair in enumerate(merges)}  # the id is the rank: earlier merges first
        self.seen = {}  # a chunk's tokens, for chunks that recur (most words of a corpus)

    def encode(self, text):
        if self.kind == "char":
            return [self.ids[b] for b in text]
        chunks = BPE_CHUNK.findall(text)
        assert b"".join(chunks) == text  # every byte falls in one alternative of the pattern
        return [t for chunk in chunks for t in self.encode_chunk(chunk)]

    def encode_chunk(self, chunk):
        """The chunk's bytes, then, while a pair of neighbours has a merge, the earliest merge among
        them applied at each of its places, left to right ("aaa" joins once)."""
        if chunk in self.seen:
            return self.seen[chunk]
        word = list(chunk)
        while len(word) > 1:
            pair = min(zip(word, word[1:]), key=lambda p: self.rank.get(p, math.inf))
            if pair not in self.rank:
                break
            merged, j = [], 0
            while j < len(word):
                if tuple(word[j : j + 2]) == pair:
                    merged.append(self.rank[pair])
                    j += 2
                else:
                    merged.append(word[j])
                    j += 1
            word = merged
        self.seen[chunk] = word
        return word

    def byte_count(self, tokens):
        return sum(len(self.pieces[t]) for t in tokens)


def alibi_slopes(heads):
    def power_of_two(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    p = 2 ** int(math.floor(math.log2(heads)))
    slopes = power_of_two(p)
    if p < heads:
        slopes += alibi_slopes(2 * p)[0::2][: heads - p]
    return slopes


def rope_frequencies(base, r, scaling, T, L):
    """Each pair's angle per position and the magnitude on the r rotated dimensions of q and k, for
    a sequence of T positions of a model trained at L, under a scaling (the checkpoint's
    "rope_scaling" metadata, or the command line's): linear is Position Interpolation (Chen et al.
    2023), ntk the NTK-aware base (bloc97), dynamic-ntk Hugging Face's, yarn Peng et al. 2023 with
    the ramp bounds of their reference code (floor and ceil of the pair turning beta times over L)."""
    method, s = scaling.get("method", "none"), scaling.get("factor", 1.0)
    base = scaling.get("base", base)
    L = scaling.get("original_context") or L
    i = torch.arange(r // 2, dtype=torch.float64)
    if method == "ntk":
        base = base * s ** (r / (r - 2))
    elif method == "dynamic-ntk" and T > L:
        base = base * (s * T / L - (s - 1)) ** (r / (r - 2))
    inv_freq = torch.pow(torch.tensor(base, dtype=torch.float64), -2.0 * i / r)
    magnitude = 1.0
    if method == "linear":
        inv_freq = inv_freq / s
    elif method == "yarn":
        def pair_turning(rotations):  # the pair whose wavelength 2π/θ fits `rotations` times into L
            return r * math.log(L / (rotations * 2 * math.pi)) / (2 * math.log(base))
        low = max(math.floor(pair_turning(scaling.get("beta_fast", 32.0))), 0)
        high = min(math.ceil(pair_turning(scaling.get("beta_slow", 1.0))), r - 1)
        if high == low:
            high += 0.001
        interpolated = ((i - low) / (high - low)).clamp(0, 1)  # 1: θ/s, 0: θ
        inv_freq = inv_freq / s * interpolated + inv_freq * (1 - interpolated)
        magnitude = scaling.get("attention_factor", 0.1 * math.log(s) + 1 if s > 1 else 1.0)
    return inv_freq, magnitude


class PosencModel(torch.nn.Module):
    def __init__(self, tensors, meta, rope_scaling=None):
        super().__init__()
        self.w = tensors
        self.policy = meta["posenc_policy"]
        self.layers, self.dim, self.heads = int(meta["layers"]), int(meta["dim"]), int(meta["heads"])
        self.trained_context = int(meta["context"])  # FIRE's threshold starts at a quarter of it
        self.position_range = int(meta.get("position_range", "0"))  # 0: positions 0, 1, 2, …
        self.rope = rope_scaling if rope_scaling is not None else json.loads(meta.get("rope_scaling", "{}"))
        if meta.get("tie_weights", "false") == "true":  # one table: the file holds no lm_head.weight
            assert "lm_head.weight" not in tensors
            self.w = dict(tensors, **{"lm_head.weight": tensors["transformer.wte.weight"]})

    def forward(self, idx):
        """Logits (B, T, V); self.attention then holds each layer's probabilities (B, H, T, T)."""
        B, T = idx.shape
        self.attention = []
        D, H = self.dim, self.heads
        hd = D // H
        w = self.w
        x = w["transformer.wte.weight"][idx]
        rows = list(range(T))
        if self.position_range:
            rows = draw_positions_for(idx.flatten().tolist(), T, self.position_range)
        pos = torch.tensor(rows, dtype=torch.float64)
        extent = rows[-1] + 1  # the positions the sequence reaches: a rotary table's length
        if self.policy == "learned":
            x = x + w["transformer.wpe.weight"][torch.tensor(rows)]
        elif self.policy == "sinusoidal":
            i = torch.arange(D)
            angle = pos[:, None] * torch.pow(10000.0, -(i // 2 * 2).double() / D)[None, :]
            x = x + torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle)).float()
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        distance = (pos[:, None] - pos[None, :]).clamp(min=0)  # i − j under the mask
        bias = torch.zeros(H, T, T)
        if self.policy in ("alibi", "alibi-single"):
            slopes = alibi_slopes(H) if self.policy == "alibi" else [2.0 ** (-8.0 / H)] * H
            bias = -torch.tensor(slopes)[:, None, None] * distance.float()[None]
        rotate = None
        if self.policy.startswith("rope"):
            # rope: every dimension, i with i + hd/2; rope-partial: the first quarter, rotate-half
            # within it (GPT-NeoX's rotary_pct); rope-interleaved: 2i with 2i + 1 (GPT-J).
            r = hd if self.policy != "rope-partial" else 2 * int(0.25 * hd / 2 + 0.5)
            inv_freq, magnitude = rope_frequencies(10000.0, r, self.rope, extent, self.trained_context)
            angle = pos[:, None] * inv_freq[None, :]
            if self.policy == "rope-interleaved":
                cos = (magnitude * angle.cos()).repeat_interleave(2, -1).float()
                sin = (magnitude * angle.sin()).repeat_interleave(2, -1).float()

                def rotate(v):
                    pairs = torch.stack([-v[..., 1::2], v[..., 0::2]], -1).flatten(-2)
                    return v * cos + pairs * sin
            else:
                cos = magnitude * torch.cat([angle.cos(), angle.cos()], -1).float()
                sin = magnitude * torch.cat([angle.sin(), angle.sin()], -1).float()

                def rotate(v):
                    head, rest = v[..., :r], v[..., r:]
                    half = torch.cat([-head[..., r // 2 :], head[..., : r // 2]], -1)
                    return torch.cat([head * cos + half * sin, rest], -1)

        if self.policy == "xpos":  # RoPE (rotate-half) with ζ^(n/512) on queries, ζ^(−m/512) on keys
            inv_freq, magnitude = rope_frequencies(10000.0, hd, self.rope, extent, self.trained_context)
            angle = pos[:, None] * inv_freq[None, :]
            zeta = (2.0 * torch.arange(hd // 2).double() / hd + 0.4) / 1.4
            zscale = torch.pow(zeta[None, :], pos[:, None] / 512.0)
            cos = magnitude * torch.cat([angle.cos(), angle.cos()], -1)
            sin = magnitude * torch.cat([angle.sin(), angle.sin()], -1)
            zs = torch.cat([zscale, zscale], -1)

            def xpos(v, key):
                half = torch.cat([-v[..., hd // 2 :], v[..., : hd // 2]], -1)
                return ((v * cos.float() + half * sin.float()) * (1 / zs if key else zs).float())

        def t5_bucket(n, buckets=32, max_distance=128):  # Hugging Face's rule, causal
            exact = buckets // 2
            large = exact + (torch.log(n.double().clamp(min=1) / exact) / math.log(max_distance / exact) * (buckets - exact)).long()
            return torch.where(n < exact, n.long(), large.clamp(max=buckets - 1))

        for l in range(self.layers):
            p = f"transformer.h.{l}."
            h = F.layer_norm(x, (D,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps=1e-5)
            qkv = F.linear(h, w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"])
            q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in qkv.split(D, dim=2))
            if rotate is not None:
                q, k = rotate(q), rotate(k)
            if self.policy == "xpos":
                q, k = xpos(q, False), xpos(k, True)
            layer_bias = bias
            if self.policy == "t5":
                table = w[p + "attn.relative_attention_bias.weight"]  # (buckets, H)
                layer_bias = table[t5_bucket(distance)].permute(2, 0, 1)
            elif self.policy == "fire":
                c = F.softplus(w[p + "attn.fire.c"])
                L = 0.25 * self.trained_context * F.softplus(w[p + "attn.fire.L_multiplier"])
                psi = lambda z: torch.log1p(c * z)
                i = pos[:, None].float().expand(T, T)
                u = psi(distance.float()) / psi(torch.maximum(i, L))
                hidden = torch.relu(u[..., None] * w[p + "attn.fire.mlp.0.weight"][:, 0] + w[p + "attn.fire.mlp.0.bias"])
                layer_bias = (hidden @ w[p + "attn.fire.mlp.2.weight"].T + w[p + "attn.fire.mlp.2.bias"]).permute(2, 0, 1)
            elif self.policy == "kerple":
                r1 = F.softplus(w[p + "attn.kerple.r1"])[:, None, None]
                r2 = F.softplus(w[p + "attn.kerple.r2"])[:, None, None]
                layer_bias = -r1 * torch.log1p(r2 * distance.float()[None])
            scores = q @ k.transpose(-1, -2) / math.sqrt(hd) + layer_bias
            att = scores.masked_fill(~mask, float("-inf")).softmax(-1)
            self.attention.append(att)
            y = (att @ v).transpose(1, 2).reshape(B, T, D)
            x = x + F.linear(y, w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"])
            h = F.layer_norm(x, (D,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps=1e-5)
            h = F.gelu(F.linear(h, w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"]), approximate="tanh")
            x = x + F.linear(h, w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])
        x = F.layer_norm(x, (D,), w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], eps=1e-5)
        return F.linear(x, w["lm_head.weight"], w["lm_head.bias"])


@torch.no_grad()
def full_pass_loss(model, tokens, context, batch=32):
    """Every target once, in non-overlapping windows of `context` tokens (the last one shorter)."""
    n = len(tokens) - 1
    total = 0.0
    starts = list(range(0, n - n % context, context))
    for i in range(0, len(starts), batch):
        group = starts[i : i + batch]
        x = torch.stack([tokens[s : s + context] for s in group])
        y = torch.stack([tokens[s + 1 : s + context + 1] for s in group])
        total += F.cross_entropy(model(x).flatten(0, 1), y.flatten(), reduction="sum").item()
    if n % context:
        s = n - n % context
        x, y = tokens[s:n][None], tokens[s + 1 : n + 1][None]
        total += F.cross_entropy(model(x).flatten(0, 1), y.flatten(), reduction="sum").item()
    return total / n


def make_parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("data")
    parser.add_argument("--context", type=int, default=0)
    # as `shakespeare eval` takes them: each given replaces the checkpoint's setting
    parser.add_argument("--rope-scaling", choices=["none", "linear", "ntk", "dynamic-ntk", "yarn"])
    parser.add_argument("--rope-factor", type=float)
    parser.add_argument("--rope-base", type=float)
    parser.add_argument("--rope-original-context", type=int)
    parser.add_argument("--yarn-beta-fast", type=float)
    parser.add_argument("--yarn-beta-slow", type=float)
    parser.add_argument("--yarn-attention-factor", type=float)
    return parser


def evaluate(args):
    tensors, meta = load_safetensors(args.checkpoint)
    rope = json.loads(meta.get("rope_scaling", "{}"))
    for option, key in [("rope_scaling", "method"), ("rope_factor", "factor"), ("rope_base", "base"),
                        ("rope_original_context", "original_context"), ("yarn_beta_fast", "beta_fast"),
                        ("yarn_beta_slow", "beta_slow"), ("yarn_attention_factor", "attention_factor")]:
        if getattr(args, option) is not None:
            rope[key] = getattr(args, option)
    model = PosencModel(tensors, meta, rope)
    tokenizer = Tokenizer(meta)
    text = open(args.data, "rb").read()
    # the bytes cut at 90% and each part encoded on its own, as posenc's TextDataset does (no BPE
    # chunk straddles the cut, and every tokenizer scores the same validation bytes)
    cut = int(len(text) * 0.9)
    context = args.context or int(meta["context"])
    result = {"context": context}
    for split, part in (("train", text[:cut]), ("val", text[cut:])):
        tokens = tokenizer.encode(part)
        loss = full_pass_loss(model, torch.tensor(tokens, dtype=torch.long), context)
        # bits per byte: the targets (every token but the first) over the bytes they stand for
        targets = len(tokens) - 1
        result[f"{split}_loss"] = loss
        result[f"{split}_targets"] = targets
        result[f"{split}_bits_per_byte"] = loss * targets / tokenizer.byte_count(tokens[1:]) / math.log(2)
    return result


def main():
    parser = make_parser()
    if len(sys.argv) == 3 and sys.argv[1] == "--batch":
        with open(sys.argv[2]) as jobs:
            for line in jobs:
                if line.strip():
                    print(json.dumps(evaluate(parser.parse_args(shlex.split(line)))), flush=True)
    else:
        print(json.dumps(evaluate(parser.parse_args())))


if __name__ == "__main__":
    main()
