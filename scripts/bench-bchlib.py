#!/usr/bin/env python3
"""Throughput of Linux lib/bch.c (through the bchlib wrapper) on the anchor cases of the
ecc benchmark: 4 KiB data, t=8 with 4 errors and t=40 with 20 errors, m=16 (0x1002d).

Prints MB/s (10^6 bytes/s) per case, and MiB/s for direct comparison with criterion's
output of `cargo bench -p ecc`. Each timed call includes bchlib's Python call overhead
(a fraction of a microsecond), so the figures slightly favour nandlab's codec; see
scripts/bench-ecc.sh, which runs both back to back.
"""
import random
import time

import bchlib

POLY = 0x1002D
SIZE = 4096


def best_rate(fn, calls=2000, rounds=7):
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return SIZE / best


def main():
    rnd = random.Random(7)
    for t, errors in [(8, 4), (40, 20)]:
        bch = bchlib.BCH(t, prim_poly=POLY)
        data = bytes(rnd.getrandbits(8) for _ in range(SIZE))
        ecc = bch.encode(data)
        enc = best_rate(lambda: bch.encode(data))
        patterns = []
        for _ in range(64):
            buf = bytearray(data)
            for p in rnd.sample(range(SIZE * 8), errors):
                buf[p // 8] ^= 0x80 >> (p % 8)
            patterns.append(bytes(buf))
        state = {"k": 0}

        def dec():
            k = state["k"]
            state["k"] = k + 1
            n = bch.decode(patterns[k % 64], ecc)
            assert n == errors, n

        decr = best_rate(dec)
        clean = best_rate(lambda: bch.decode(data, ecc))
        for name, rate in [("encode", enc), (f"decode-{errors}err", decr), ("decode-clean", clean)]:
            print(f"bchlib 4KiB t={t:<2} {name:<13} {rate / 1e6:8.1f} MB/s {rate / 2**20:8.1f} MiB/s")


if __name__ == "__main__":
    main()
