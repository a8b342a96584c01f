//! Micro-benchmark of the chip emulator on the sparse RAM backend: page programs and page
//! reads per second, for 4 KiB and 16 KiB pages. The floor for simulator speed.
//!
//! Run: `cargo bench -p nand --bench ram_backend`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nand::{Chip, ChipConfig, Nanos, PhysAddr};
use std::hint::black_box;
use std::time::{Duration, Instant};

const BLOCKS: u32 = 64;
const PAGES: u32 = 64;

fn chip(page_size: u32) -> Chip {
    let mut c = ChipConfig::preset("tiny-slc").unwrap();
    c.geometry.blocks_per_plane = BLOCKS;
    c.geometry.pages_per_block = PAGES;
    c.geometry.page_size = page_size;
    c.geometry.spare_size = page_size / 32;
    c.reliability.wear_fail_rate = 0.0;
    c.reliability.wear_fail_growth = 0.0;
    Chip::ram(c).unwrap()
}

fn addr(c: &Chip, i: u64) -> PhysAddr {
    c.geometry()
        .page_at(i % c.geometry().total_pages())
        .unwrap()
}

fn bench(cr: &mut Criterion) {
    for page_size in [4096u32, 16384] {
        let mut g = cr.benchmark_group(format!("ram/{}KiB", page_size / 1024));
        g.throughput(Throughput::Elements(1));
        g.measurement_time(Duration::from_secs(3));

        // Programs: blocks are erased between batches, outside the timed region.
        let mut c = chip(page_size);
        let data = vec![0x3Cu8; page_size as usize];
        let spare = vec![0xC3u8; (page_size / 32) as usize];
        let mut next: u64 = 0;
        g.bench_function("program", |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let page = (next % PAGES as u64) as u32;
                    let a = addr(&c, next);
                    if page == 0 && c.block_info(a.block_addr()).unwrap().next_page > 0 {
                        c.erase(Nanos::ZERO, a.block_addr()).unwrap();
                    }
                    let batch = left.min((PAGES - page) as u64);
                    let start = Instant::now();
                    for k in 0..batch {
                        let a = addr(&c, next + k);
                        black_box(c.program(Nanos::ZERO, a, &data, &spare).unwrap());
                    }
                    timed += start.elapsed();
                    next += batch;
                    left -= batch;
                }
                timed
            })
        });

        // Reads of programmed pages.
        let mut c = chip(page_size);
        for i in 0..c.geometry().total_pages() {
            let a = addr(&c, i);
            c.program(Nanos::ZERO, a, &data, &spare).unwrap();
        }
        let mut d = vec![0u8; page_size as usize];
        let mut s = vec![0u8; (page_size / 32) as usize];
        let mut i = 0u64;
        g.bench_function("read", |b| {
            b.iter(|| {
                let a = addr(&c, i);
                i += 1;
                black_box(c.read(Nanos::ZERO, a, &mut d, &mut s).unwrap());
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
