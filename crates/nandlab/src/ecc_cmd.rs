//! `nandlab ecc …`: the BCH codec and the reliability calculator for users and scripts.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use ecc::reliability::{self, AP_TABLE1_BITS};
use ecc::Bch;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Subcommand)]
pub enum EccCommand {
    /// Encode a file sector by sector; the parity goes to a side file.
    Encode {
        #[command(flatten)]
        code: CodeArgs,
        /// The file to protect.
        input: PathBuf,
        /// Where to write the parity (one block of ecc_bytes per sector).
        #[arg(long)]
        parity: PathBuf,
    },
    /// Decode a file against its parity file, correcting it; exits non-zero if any sector is
    /// uncorrectable.
    Decode {
        #[command(flatten)]
        code: CodeArgs,
        /// The (possibly corrupted) file.
        input: PathBuf,
        /// Its parity file from `ecc encode`.
        #[arg(long)]
        parity: PathBuf,
        /// Where to write the corrected data (default: correct INPUT in place).
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Analytic page failure probability and UBER of a binomial bit-error channel.
    Uber(UberArgs),
    /// FLARES's precomputed tables: corr_table (smallest p per RBER range at a target
    /// UBER) and max_ret_time (longest retention per p and P/E count, FLARES eq. 5 model).
    Flares {
        /// Bits per codeword (FLARES: one 4 KiB page).
        #[arg(long, default_value_t = 4096 * 8)]
        bits: u64,
        /// Target UBER.
        #[arg(long, default_value_t = 1e-11)]
        uber: f64,
        /// Smallest correction capability in the tables.
        #[arg(long, default_value_t = 3)]
        p_min: u64,
        /// Largest correction capability in the tables.
        #[arg(long, default_value_t = 50)]
        p_max: u64,
        /// P/E counts for the max_ret_time columns.
        #[arg(long, value_delimiter = ',', default_value = "1000,3000,5000,10000")]
        pe: Vec<u32>,
    },
    /// Encode/decode throughput (MB/s) on the benchmark anchor cases.
    Bench {
        /// Seconds to run each case.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
    },
}

/// Which BCH code.
#[derive(Debug, Args)]
pub struct CodeArgs {
    /// Correction capability per sector (bits).
    #[arg(long, short)]
    t: u32,
    /// Sector size in bytes (each sector is one codeword).
    #[arg(long, default_value_t = 512)]
    sector: usize,
    /// Galois field degree (default: the smallest field that fits the sector).
    #[arg(long, short)]
    m: Option<u32>,
    /// Primitive polynomial, e.g. 0x201b (default: Linux lib/bch.c's for m).
    #[arg(long, value_parser = parse_hex)]
    poly: Option<u32>,
}

fn parse_hex(s: &str) -> Result<u32, String> {
    let digits = s.trim_start_matches("0x").trim_start_matches("0X");
    u32::from_str_radix(digits, 16).map_err(|e| format!("{s:?} is not a hex polynomial: {e}"))
}

impl CodeArgs {
    fn build(&self) -> Result<Bch> {
        if self.sector == 0 {
            bail!("--sector 0: a sector (one codeword's data) holds at least one byte");
        }
        let bch = match (self.m, self.poly) {
            (None, None) => Bch::for_sector(self.sector, self.t),
            (Some(m), None) => Bch::new(m, self.t),
            (m, Some(poly)) => {
                let deg = 31 - poly.leading_zeros();
                if let Some(m) = m {
                    if m != deg {
                        bail!("--poly {poly:#x} has degree {deg}, not --m {m}");
                    }
                }
                Bch::with_poly(deg, self.t, poly)
            }
        }
        .with_context(|| format!("invalid code (t = {}, sector = {} B)", self.t, self.sector))?;
        if bch.max_data_bytes() < self.sector {
            bail!(
                "sector of {} bytes does not fit GF(2^{}) at t = {} (at most {} bytes)",
                self.sector,
                bch.m(),
                self.t,
                bch.max_data_bytes()
            );
        }
        Ok(bch)
    }
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct UberArgs {
    /// Bits per codeword (page).
    #[arg(long, required_unless_present = "ap_table1")]
    bits: Option<u64>,
    /// Raw bit error rate.
    #[arg(long, required_unless_present = "ap_table1")]
    rber: Option<f64>,
    /// Bits the code corrects.
    #[arg(long, short, required_unless_present = "ap_table1")]
    t: Option<u64>,
    /// Ratio of this page's RBER to the given one (AP: 0.5 for MSB pages).
    #[arg(long, default_value_t = 1.0)]
    sigma: f64,
    /// Print AP Table 1 (3-bit ECC, LSB and MSB rows, σ = 0.5) beside the paper's values.
    #[arg(long, conflicts_with_all = ["bits", "rber", "t", "sigma"])]
    ap_table1: bool,
}

pub fn run(cmd: EccCommand) -> Result<()> {
    match cmd {
        EccCommand::Encode {
            code,
            input,
            parity,
        } => {
            let bch = code.build()?;
            let data = std::fs::read(&input)
                .with_context(|| format!("cannot read {}", input.display()))?;
            let mut out = Vec::with_capacity(data.len().div_ceil(code.sector) * bch.ecc_bytes());
            let mut ecc = vec![0u8; bch.ecc_bytes()];
            for sector in data.chunks(code.sector) {
                bch.encode(sector, &mut ecc)?;
                out.extend_from_slice(&ecc);
            }
            std::fs::write(&parity, &out)
                .with_context(|| format!("cannot write {}", parity.display()))?;
            println!(
                "{} sectors of {} B, BCH m={} t={} poly={:#x}: {} parity bytes each → {}",
                data.len().div_ceil(code.sector),
                code.sector,
                bch.m(),
                bch.t(),
                bch.prim_poly(),
                bch.ecc_bytes(),
                parity.display()
            );
            Ok(())
        }
        EccCommand::Decode {
            code,
            input,
            parity,
            output,
        } => {
            let bch = code.build()?;
            let mut data = std::fs::read(&input)
                .with_context(|| format!("cannot read {}", input.display()))?;
            let mut par = std::fs::read(&parity)
                .with_context(|| format!("cannot read {}", parity.display()))?;
            let sectors = data.len().div_ceil(code.sector);
            if par.len() != sectors * bch.ecc_bytes() {
                bail!(
                    "parity file {} has {} bytes; {} sectors × {} parity bytes = {} expected (same --t/--sector/--m as encode?)",
                    parity.display(),
                    par.len(),
                    sectors,
                    bch.ecc_bytes(),
                    sectors * bch.ecc_bytes()
                );
            }
            let (mut corrected, mut failed) = (0u64, Vec::new());
            for (i, (sector, ecc)) in data
                .chunks_mut(code.sector)
                .zip(par.chunks_mut(bch.ecc_bytes()))
                .enumerate()
            {
                match bch.decode(sector, ecc) {
                    Ok(n) => corrected += n as u64,
                    Err(ecc::EccError::Uncorrectable) => failed.push(i),
                    Err(e) => return Err(e.into()),
                }
            }
            let target = output.as_ref().unwrap_or(&input);
            std::fs::write(target, &data)
                .with_context(|| format!("cannot write {}", target.display()))?;
            println!(
                "{sectors} sectors: {corrected} bits corrected, {} uncorrectable → {}",
                failed.len(),
                target.display()
            );
            if !failed.is_empty() {
                bail!("uncorrectable sectors: {failed:?}");
            }
            Ok(())
        }
        EccCommand::Uber(args) => uber(args),
        EccCommand::Bench { seconds } => bench(seconds),
        EccCommand::Flares {
            bits,
            uber,
            p_min,
            p_max,
            pe,
        } => flares(bits, uber, p_min, p_max, &pe),
    }
}

fn uber(a: UberArgs) -> Result<()> {
    if a.ap_table1 {
        println!("AP Table 1: uncorrectable page error rate, 3-bit ECC, N = {AP_TABLE1_BITS} bits (the paper's 8192+448-byte page counted as bits), σ = 0.5");
        println!(
            "{:>9} {:>11} {:>11} {:>7} {:>11} {:>11} {:>7}",
            "RBER", "LSB", "paper", "err %", "MSB", "paper", "err %"
        );
        for (i, &r) in AP_RBER.iter().enumerate() {
            let l = reliability::page_failure(AP_TABLE1_BITS, r, 3, 1.0);
            let m = reliability::page_failure(AP_TABLE1_BITS, r, 3, 0.5);
            println!(
                "{r:>9.2e} {l:>11.3e} {:>11.3e} {:>7.2} {m:>11.3e} {:>11.3e} {:>7.2}",
                AP_LSB[i],
                100.0 * (l - AP_LSB[i]) / AP_LSB[i],
                AP_MSB[i],
                100.0 * (m - AP_MSB[i]) / AP_MSB[i]
            );
        }
        return Ok(());
    }
    let (bits, rber, t) = (a.bits.unwrap(), a.rber.unwrap(), a.t.unwrap());
    if !(0.0..=1.0).contains(&rber) {
        bail!("--rber {rber} is not a probability");
    }
    if bits == 0 {
        bail!("--bits 0: a codeword has at least one bit");
    }
    if !a.sigma.is_finite() || a.sigma <= 0.0 || rber * a.sigma > 1.0 {
        bail!(
            "--sigma {:e}: must be positive, and --rber × --sigma a probability (here {:e})",
            a.sigma,
            rber * a.sigma
        );
    }
    let r = rber * a.sigma;
    let fail = reliability::prob_more_than(bits, r, t);
    println!("bits per codeword  {bits}");
    println!("effective RBER     {r:.4e}");
    println!("P(errors > {t})     {fail:.4e}");
    println!("UBER               {:.4e}", fail / bits as f64);
    Ok(())
}

/// AP Table 1's RBER columns and rows (see ecc/tests/ap_table1.rs for the reading of the
/// garbled MSB row).
const AP_RBER: [f64; 8] = [2e-6, 4e-6, 6e-6, 8e-6, 2e-5, 4e-5, 6e-5, 8e-5];
const AP_LSB: [f64; 8] = [
    3.66e-9, 5.78e-8, 2.89e-7, 8.99e-7, 3.23e-5, 4.51e-4, 2.00e-3, 5.50e-3,
];
const AP_MSB: [f64; 8] = [
    2.30e-10, 3.66e-9, 1.84e-8, 5.78e-8, 2.17e-6, 3.23e-5, 1.53e-4, 4.51e-4,
];

fn flares(bits: u64, uber: f64, p_min: u64, p_max: u64, pe: &[u32]) -> Result<()> {
    if !(uber > 0.0 && uber < 1.0) {
        bail!("--uber {uber} must be in (0, 1)");
    }
    if p_min > p_max || p_max >= bits {
        bail!("--p-min {p_min} / --p-max {p_max} out of range for {bits}-bit codewords");
    }
    let model = nand::FlaresRber::default();
    const YEAR_H: f64 = 24.0 * 365.0;
    println!("FLARES tables for {bits}-bit codewords, target UBER {uber:e}; retention in hours (horizon 10 years)");
    print!("{:>4} {:>11} {:>11}", "p", "min_rber", "max_rber");
    for c in pe {
        print!(" {:>12}", format!("ret@{c}PE"));
    }
    println!();
    for row in reliability::corr_table(bits, p_min, p_max, uber) {
        print!(
            "{:>4} {:>11.3e} {:>11.3e}",
            row.p, row.min_rber, row.max_rber
        );
        for &c in pe {
            let h = reliability::max_retention(bits, row.p, uber, 10.0 * YEAR_H, |h| {
                model.at(c as f64, h)
            });
            print!(" {h:>12.1}");
        }
        println!();
    }
    Ok(())
}

fn bench(seconds: f64) -> Result<()> {
    if !(seconds > 0.0 && seconds.is_finite()) {
        bail!("--seconds {seconds}: a measurement needs a positive duration");
    }
    println!("BCH throughput, 4 KiB sectors (GF(2^16), poly 0x1002d); 1 MB = 10^6 bytes");
    for (t, errors) in [(8u32, 4usize), (40, 20)] {
        let bch = Bch::for_sector(4096, t)?;
        let mut x = 0x2545_F491u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let data: Vec<u8> = (0..4096).map(|_| rnd() as u8).collect();
        let ecc = bch.encode_vec(&data)?;
        let mut out = vec![0u8; bch.ecc_bytes()];
        let rate = |f: &mut dyn FnMut()| {
            let start = Instant::now();
            let mut n = 0u64;
            while start.elapsed().as_secs_f64() < seconds {
                for _ in 0..64 {
                    f();
                }
                n += 64;
            }
            n as f64 * 4096.0 / start.elapsed().as_secs_f64() / 1e6
        };
        let enc = rate(&mut || bch.encode(std::hint::black_box(&data), &mut out).unwrap());
        let patterns: Vec<Vec<usize>> = (0..64)
            .map(|_| {
                let mut p: Vec<usize> = Vec::new();
                while p.len() < errors {
                    let b = (rnd() % (4096 * 8)) as usize;
                    if !p.contains(&b) {
                        p.push(b);
                    }
                }
                p
            })
            .collect();
        let (mut buf, mut e, mut k) = (data.clone(), ecc.clone(), 0usize);
        let dec = rate(&mut || {
            buf.copy_from_slice(&data);
            e.copy_from_slice(&ecc);
            for &p in &patterns[k % 64] {
                buf[p / 8] ^= 0x80 >> (p % 8);
            }
            k += 1;
            assert_eq!(bch.decode(&mut buf, &mut e).unwrap() as usize, errors);
        });
        println!("t={t:<3} encode {enc:8.1} MB/s   decode ({errors} errors) {dec:8.1} MB/s");
    }
    Ok(())
}
