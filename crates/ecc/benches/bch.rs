//! BCH throughput on the anchor cases: 4 KiB data (m = 16), t = 8, 40 and 60, each with t/2
//! and t errors, error-free decode and encode. Prints criterion's "thrpt" in MiB/s.
//!
//! Run: `cargo bench -p ecc`; `scripts/bench-ecc.sh` compiles Linux lib/bch.c with
//! `-O3 -march=native` (`scripts/bench-libbch.c`, same data, same error patterns, same work
//! per decode) and prints the ratio per case.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ecc::Bch;
use std::hint::black_box;
use std::time::Duration;

fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    for t in [8u32, 40, 60] {
        let bch = Bch::for_sector(4096, t).unwrap();
        let d = data(4096, 7);
        let ecc = bch.encode_vec(&d).unwrap();
        let mut g = c.benchmark_group(format!("bch-4KiB-t{t}"));
        g.throughput(Throughput::Bytes(4096));
        g.measurement_time(Duration::from_secs(2));
        g.warm_up_time(Duration::from_millis(500));
        let mut out = vec![0u8; bch.ecc_bytes()];
        g.bench_function("encode", |b| {
            b.iter(|| bch.encode(black_box(&d), &mut out).unwrap())
        });
        // The anchor of the AVX-512 path (where the CPU has it): the 128-bit path.
        let narrow = bch.clone().without_avx512();
        g.bench_function("encode-without-avx512", |b| {
            b.iter(|| narrow.encode(black_box(&d), &mut out).unwrap())
        });
        for errors in [t as usize / 2, t as usize] {
            // Error patterns spread over the data, a different one each iteration.
            let patterns: Vec<Vec<usize>> = (0..64)
                .map(|k| {
                    let mut pos: Vec<usize> = Vec::new();
                    let mut x = 0x9E37_79B9u64 + k;
                    while pos.len() < errors {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let p = (x % (4096 * 8)) as usize;
                        if !pos.contains(&p) {
                            pos.push(p);
                        }
                    }
                    pos
                })
                .collect();
            let mut k = 0;
            let mut buf = d.clone();
            let mut e = ecc.clone();
            g.bench_function(format!("decode-{errors}err"), |b| {
                b.iter(|| {
                    buf.copy_from_slice(&d);
                    e.copy_from_slice(&ecc);
                    for &p in &patterns[k % patterns.len()] {
                        buf[p / 8] ^= 0x80 >> (p % 8);
                    }
                    k += 1;
                    let n = bch.decode(black_box(&mut buf), &mut e).unwrap();
                    assert_eq!(n as usize, errors);
                })
            });
        }
        let mut buf = d.clone();
        let mut e = ecc.clone();
        g.bench_function("decode-clean", |b| {
            b.iter(|| {
                buf.copy_from_slice(&d);
                e.copy_from_slice(&ecc);
                bch.decode(black_box(&mut buf), &mut e).unwrap()
            })
        });
        g.finish();
    }
}

/// The simulator's case: a 4 KiB page encoded as eight 512-byte sectors at t = 8 (104-bit
/// parity), sector by sector with and without the AVX-512 path, and in one
/// `encode_sectors` call.
fn sectors(c: &mut Criterion) {
    let bch = Bch::for_sector(512, 8).unwrap();
    let narrow = bch.clone().without_avx512();
    let d = data(4096, 9);
    let mut out = vec![0u8; bch.ecc_bytes()];
    let mut g = c.benchmark_group("bch-8x512B-t8");
    g.throughput(Throughput::Bytes(4096));
    g.measurement_time(Duration::from_secs(3));
    for (name, code) in [("encode", &bch), ("encode-without-avx512", &narrow)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                for s in black_box(&d).chunks_exact(512) {
                    code.encode(s, &mut out).unwrap();
                }
            })
        });
    }
    // All eight in one call: four sectors side by side on the AVX-512 path.
    let mut all = vec![0u8; 8 * bch.ecc_bytes()];
    g.bench_function("encode-sectors", |b| {
        b.iter(|| bch.encode_sectors(black_box(&d), 512, &mut all).unwrap())
    });
    g.finish();
}

criterion_group!(benches, sectors, bench);
criterion_main!(benches);
