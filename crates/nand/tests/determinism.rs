//! The same seed gives the same chip, byte for byte; another seed gives another.

mod common;
use common::*;
use nand::{Chip, ChipConfig, CutMode, NandError, Nanos, TornFill};

fn run(seed: u64) -> Vec<String> {
    let mut cfg: ChipConfig = config("tiny-mlc");
    cfg.seed = seed;
    cfg.reliability.factory_bad_rate = 0.2;
    cfg.reliability.endurance = 3;
    cfg.reliability.wear_fail_rate = 0.2;
    let mut c = Chip::ram(cfg).unwrap();
    let g = *c.geometry();
    let mut log = Vec::new();
    log.push(format!("{:?}", c.bad_blocks().collect::<Vec<_>>()));
    let mut t = Nanos::ZERO;
    for round in 0..6u64 {
        for b in 0..g.total_blocks() {
            let ba = g.block_at(b).unwrap();
            for p in 0..4 {
                let (d, s) = buffers(&c, round * 1000 + b as u64 * 10 + p as u64);
                if round == 2 && b == 5 && p == 2 {
                    c.arm_cut(1, CutMode::TornProgram(TornFill::Random));
                }
                if round == 3 && b == 6 && p == 2 {
                    c.arm_cut(1, CutMode::PairedPage);
                }
                let r = c.program(t, ba.page(p).unwrap(), &d, &s);
                if r == Err(NandError::PowerLoss) {
                    c.power_on();
                }
                log.push(format!("{r:?}"));
                t += Nanos::from_us(100);
            }
            log.push(format!("{:?}", c.erase(t, ba)));
        }
        for b in 0..g.total_blocks() {
            let ba = g.block_at(b).unwrap();
            for p in 0..4 {
                let mut d = vec![0; g.page_size as usize];
                let mut s = vec![0; g.spare_size as usize];
                let r = c.read(t, ba.page(p).unwrap(), &mut d, &mut s);
                log.push(format!(
                    "{r:?} {:08x}",
                    crc32fast::hash(&d) ^ crc32fast::hash(&s)
                ));
            }
        }
    }
    log.push(format!("{:?}", c.counters()));
    log
}

#[test]
fn same_seed_same_chip() {
    assert_eq!(run(1), run(1));
    assert_eq!(run(77), run(77));
}

#[test]
fn different_seeds_differ() {
    let a = run(1);
    let b = run(2);
    assert_ne!(a[0], b[0], "factory-bad blocks should depend on the seed");
    assert_ne!(a, b);
}

#[test]
fn factory_bad_rate_is_respected() {
    let mut cfg = config("k9k8g08u0b"); // 8192 blocks
    cfg.reliability.factory_bad_rate = 0.02;
    cfg.seed = 5;
    let c = Chip::ram(cfg).unwrap();
    let bad = c.bad_blocks().count() as f64;
    // Binomial(8191, 0.02): mean 164, sd 12.7; allow 5 sd.
    assert!((bad - 163.8).abs() < 64.0, "{bad} bad blocks");
    assert_eq!(
        c.block_status(c.geometry().block_at(0).unwrap()).unwrap(),
        nand::BlockStatus::Good
    );
}
