#!/usr/bin/env python3
"""Encodes deterministic data with bchlib (Python wrapper of Linux lib/bch.c).

Reads lines "m t poly len seed" on stdin and prints, for each, the same five fields and the
parity bytes in hex. Data bytes come from xorshift64* seeded with `seed`, the top byte of
each output, exactly as `data_for` in tests/linux_compat.rs generates them.

Used by the ecc crate's tests (live comparison) and to regenerate the committed vectors:
    python3 bchlib_helper.py --vectors > data/linux_vectors.txt
"""
import sys

MASK = (1 << 64) - 1


def data_for(seed, length):
    x = (seed ^ 0x9E3779B97F4A7C15) & MASK or 1
    out = bytearray(length)
    for i in range(length):
        x ^= x >> 12
        x ^= (x << 25) & MASK
        x ^= x >> 27
        out[i] = ((x * 0x2545F4914F6CDD1D) & MASK) >> 56
    return bytes(out)


def encode(m, t, poly, length, seed):
    import bchlib
    bch = bchlib.BCH(t, prim_poly=poly)
    assert bch.m == m, (bch.m, m)
    return bch.encode(data_for(seed, length)).hex()


VECTOR_CASES = [
    # (m, t, poly, len): every supported m with Linux's polynomial, the sector sizes of the
    # issue, and the anchor codes.
    (5, 1, 0x25, 2), (5, 2, 0x25, 1), (6, 3, 0x43, 5), (7, 4, 0x83, 10), (8, 4, 0x11d, 20),
    (9, 4, 0x211, 50), (10, 8, 0x409, 100), (11, 8, 0x805, 200), (12, 8, 0x1053, 400),
    (13, 1, 0x201b, 512), (13, 4, 0x201b, 512), (13, 8, 0x201b, 512), (13, 24, 0x201b, 512),
    (13, 64, 0x201b, 512), (14, 8, 0x402b, 1024), (14, 40, 0x402b, 1024), (15, 8, 0x8003, 2048),
    (15, 64, 0x8003, 2048), (16, 8, 0x1002d, 4096), (16, 40, 0x1002d, 4096), (16, 64, 0x1002d, 4096),
    (16, 1, 0x1002d, 4096), (13, 3, 0x201b, 511), (14, 13, 0x402b, 1023), (16, 17, 0x1002d, 4093),
    # generators of degree below m*t (short cyclotomic cosets): parity padded as Linux does
    (6, 9, 0x43, 2), (8, 20, 0x11d, 10), (9, 40, 0x211, 10),
]


def main():
    if "--vectors" in sys.argv:
        for i, (m, t, poly, length) in enumerate(VECTOR_CASES):
            seed = 1000 + i
            print(m, t, hex(poly), length, seed, encode(m, t, poly, length, seed))
        return
    for line in sys.stdin:
        if not line.strip():
            continue
        m, t, poly, length, seed = line.split()
        m, t, poly, length, seed = int(m), int(t), int(poly, 0), int(length), int(seed)
        print(m, t, hex(poly), length, seed, encode(m, t, poly, length, seed), flush=True)


if __name__ == "__main__":
    main()
