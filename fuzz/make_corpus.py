#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus, fuzz/corpus/seed_NNN (byte format: fuzz/README.md).

One seed per (corruption kind, dtype), the flags, sizes and layouts varied from seed to seed so
that every flag, both value modes and every layout code family appear; plus valid cases of every
dtype with every flag combination; then the same with projections (byte 23 bits 5-7: proj_size):
valid cases of every dtype and flag family, and the corruption kinds whose checks projections
change. Deterministic: running it again rewrites the same files (the seeds with projections come
last, drawn after the others, so those keep their bytes).

    python3 fuzz/make_corpus.py            # rewrites fuzz/corpus/
"""
import pathlib
import random

CORRUPTION_KINDS = 23  # Corruption::kCount in fuzz_case.h (kNone included)
DTYPES = 4


def case_bytes(flags, T, B, I, H, L, mode, corruption, detail, seed, layouts, grads, tail):
    """The fixed header of fuzz/README.md followed by `tail` (lengths, special positions...)."""
    out = bytearray([flags, T - 1, B - 1, I - 1, H - 1, L - 1, mode, corruption, detail])
    out += seed.to_bytes(8, "big")
    out += bytes(layouts)  # input, hx, params, batch_sizes, saved, grads
    out.append(grads)
    out += bytes(tail)
    return bytes(out)


def corruption_byte(kind):
    """The corruption byte selecting `kind` (0 = none)."""
    if kind == 0:
        return 0
    # corruption = 1 + byte % (kCount - 1) for byte >= 128
    for b in range(128, 256):
        if 1 + b % (CORRUPTION_KINDS - 1) == kind:
            return b
    raise ValueError(kind)


def main():
    rng = random.Random(20240501)
    folder = pathlib.Path(__file__).resolve().parent / "corpus"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("seed_*"):
        old.unlink()
    seeds = []
    for kind in range(CORRUPTION_KINDS):
        for dtype in range(DTYPES):
            flags = dtype | (rng.randrange(64) << 2)
            if kind in (12, 13, 14):  # the batch_sizes corruptions need variable length
                flags |= 128
            mode = rng.choice([0, 7, 8, 15])  # bit pattern: special values on 7/15, 2 threads on 0/7
            layouts = [rng.choice([0, rng.randrange(96, 256)]) for _ in range(6)]
            tail = [rng.randrange(256) for _ in range(24)]
            seeds.append(case_bytes(flags, rng.randint(1, 6), rng.randint(1, 5), rng.randint(1, 7),
                                    rng.randint(1, 9), rng.randint(1, 3), mode,
                                    corruption_byte(kind), rng.randrange(256),
                                    rng.getrandbits(64), layouts, rng.randrange(32), tail))
    # Valid calls: every flag combination for every dtype, contiguous and strided.
    for flags in range(256):
        layouts = [0] * 6 if flags % 2 == 0 else [rng.randrange(96, 256) for _ in range(6)]
        tail = [rng.randrange(256) for _ in range(16)]
        seeds.append(case_bytes(flags, rng.randint(1, 6), rng.randint(1, 5), rng.randint(1, 7),
                                rng.randint(1, 9), rng.randint(1, 3), 0, 0, 0,
                                rng.getrandbits(64), layouts, 0, tail))
    # Projections (byte 23 bits 5-7, P = 1 + (code - 1) % (H - 1)): valid calls of every dtype
    # over the flag families (H >= 2), contiguous and strided, both value modes, 2 threads.
    for k in range(64):
        flags = (k % 4) | (rng.randrange(64) << 2)
        layouts = [0] * 6 if k % 3 else [rng.randrange(96, 256) for _ in range(6)]
        tail = [rng.randrange(256) for _ in range(24)]
        grads = (1 + k % 7) << 5 | (rng.randrange(8) if k % 5 == 0 else 0)
        seeds.append(case_bytes(flags, rng.randint(1, 6), rng.randint(1, 5), rng.randint(1, 7),
                                rng.randint(2, 9), rng.randint(1, 3), rng.choice([0, 7, 8, 15]),
                                0, 0, rng.getrandbits(64), layouts, grads, tail))
    # ... and every corruption kind with projections, one dtype each (H = 1 included: P = H,
    # refused).
    for kind in range(1, CORRUPTION_KINDS):
        flags = (kind % 4) | (rng.randrange(64) << 2)
        if kind in (12, 13, 14):
            flags |= 128
        layouts = [rng.choice([0, rng.randrange(96, 256)]) for _ in range(6)]
        tail = [rng.randrange(256) for _ in range(24)]
        seeds.append(case_bytes(flags, rng.randint(1, 6), rng.randint(1, 5), rng.randint(1, 7),
                                rng.randint(1 if kind == 1 else 2, 9), rng.randint(1, 3),
                                rng.choice([0, 7, 8, 15]), corruption_byte(kind),
                                rng.randrange(256), rng.getrandbits(64), layouts,
                                (1 + kind % 7) << 5, tail))
    for k, data in enumerate(seeds):
        (folder / f"seed_{k:03d}").write_bytes(data)
    print(f"wrote {len(seeds)} seeds to {folder}")


if __name__ == "__main__":
    main()
