//! `nandlab ecc …`: the BCH codec and the reliability calculator for users and scripts.

use crate::ecc_side::{self, SideHeader};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use ecc::reliability::{self, AP_TABLE1_BITS};
use ecc::Bch;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Subcommand)]
pub enum EccCommand {
    /// Encode a file sector by sector into a side file: a header naming the code (m, t,
    /// polynomial, sector size, file length), then per sector the BCH parity and a CRC32C
    /// of the sector's data.
    Encode {
        #[command(flatten)]
        code: CodeArgs,
        /// The file to protect.
        input: PathBuf,
        /// Where to write the side file.
        #[arg(long)]
        parity: PathBuf,
        /// Write the bare parity instead (ecc_bytes per sector, no header and no CRC: the
        /// bytes Linux lib/bch.c produces). `ecc decode` then needs the code on its command
        /// line and cannot tell a miscorrection from a correction.
        #[arg(long)]
        no_crc: bool,
    },
    /// Decode a file against its side file, correcting it; exits non-zero if any sector is
    /// uncorrectable.
    ///
    /// With a side file from `ecc encode` the code is read from its header (options given
    /// here must agree with it), the file's length is checked, and each decoded sector's
    /// CRC32C is compared with the one recorded at encoding: more than t errors can decode
    /// to another codeword, and such a miscorrection is reported as uncorrectable and the
    /// sector left as read, never written as "corrected". A bare parity file (`--no-crc`)
    /// is decoded with the code given here (-t required), without that check.
    Decode {
        #[command(flatten)]
        code: DecodeCodeArgs,
        /// The (possibly corrupted) file.
        input: PathBuf,
        /// Its side file from `ecc encode` (or a bare parity file).
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
    /// Encode/decode throughput (MB/s) on the benchmark anchor cases (4 KiB sectors, t = 8,
    /// 40 and 60 with t/2 errors).
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

/// The code for `ecc decode`: read from the side file's header, or given here for a bare
/// parity file.
#[derive(Debug, Args)]
pub struct DecodeCodeArgs {
    /// Correction capability per sector (bits); required for a bare parity file.
    #[arg(long, short)]
    t: Option<u32>,
    /// Sector size in bytes [default for a bare parity file: 512].
    #[arg(long)]
    sector: Option<usize>,
    /// Galois field degree (default: the smallest field that fits the sector).
    #[arg(long, short)]
    m: Option<u32>,
    /// Primitive polynomial, e.g. 0x201b (default: Linux lib/bch.c's for m).
    #[arg(long, value_parser = parse_hex)]
    poly: Option<u32>,
}

impl DecodeCodeArgs {
    /// Refuses an option that disagrees with the side file's header.
    fn check_against(&self, h: &SideHeader, path: &std::path::Path) -> Result<()> {
        let given = [
            ("-t", self.t.map(u64::from), h.t as u64),
            ("--sector", self.sector.map(|s| s as u64), h.sector as u64),
            ("-m", self.m.map(u64::from), h.m as u64),
            ("--poly", self.poly.map(u64::from), h.poly as u64),
        ];
        let wrong: Vec<String> = given
            .iter()
            .filter_map(|&(flag, g, v)| match g {
                Some(g) if g != v => Some(if flag == "--poly" {
                    format!("{flag} {g:#x} (the side file says {v:#x})")
                } else {
                    format!("{flag} {g} (the side file says {v})")
                }),
                _ => None,
            })
            .collect();
        if !wrong.is_empty() {
            bail!(
                "side file {} was written with m = {}, t = {}, poly = {:#x}, {}-byte sectors; given {}: leave the code options out to use the side file's",
                path.display(),
                h.m,
                h.t,
                h.poly,
                h.sector,
                wrong.join(", ")
            );
        }
        Ok(())
    }
}

fn parse_hex(s: &str) -> Result<u32, String> {
    let digits = s.trim_start_matches("0x").trim_start_matches("0X");
    u32::from_str_radix(digits, 16).map_err(|e| format!("{s:?} is not a hex polynomial: {e}"))
}

impl CodeArgs {
    fn build(&self) -> Result<Bch> {
        build_code(self.t, self.sector, self.m, self.poly)
    }
}

/// The BCH code for `sector`-byte sectors at strength `t`, in the field of degree `m` or
/// on polynomial `poly` when given.
fn build_code(t: u32, sector: usize, m: Option<u32>, poly: Option<u32>) -> Result<Bch> {
    if sector == 0 {
        bail!("--sector 0: a sector (one codeword's data) holds at least one byte");
    }
    let bch = match (m, poly) {
        (None, None) => Bch::for_sector(sector, t),
        (Some(m), None) => Bch::new(m, t),
        (m, Some(poly)) => {
            let deg = 31 - poly.leading_zeros();
            if let Some(m) = m {
                if m != deg {
                    bail!("--poly {poly:#x} has degree {deg}, not --m {m}");
                }
            }
            Bch::with_poly(deg, t, poly)
        }
    }
    .with_context(|| format!("invalid code (t = {t}, sector = {sector} B)"))?;
    if bch.max_data_bytes() < sector {
        bail!(
            "sector of {sector} bytes does not fit GF(2^{}) at t = {t} (at most {} bytes)",
            bch.m(),
            bch.max_data_bytes()
        );
    }
    Ok(bch)
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
            no_crc,
        } => encode(&code, &input, &parity, no_crc),
        EccCommand::Decode {
            code,
            input,
            parity,
            output,
        } => decode(&code, &input, &parity, output.as_deref()),
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

fn encode(
    code: &CodeArgs,
    input: &std::path::Path,
    parity: &std::path::Path,
    no_crc: bool,
) -> Result<()> {
    let bch = code.build()?;
    let data = std::fs::read(input).with_context(|| format!("cannot read {}", input.display()))?;
    let sectors = data.len().div_ceil(code.sector);
    let header = SideHeader {
        crc: true,
        m: bch.m(),
        t: bch.t(),
        poly: bch.prim_poly(),
        sector: u32::try_from(code.sector).context("--sector is too large for a side file")?,
        ecc_bytes: bch.ecc_bytes() as u32,
        data_len: data.len() as u64,
    };
    let mut out = Vec::with_capacity(ecc_side::HEADER + sectors * header.record());
    if !no_crc {
        out.extend_from_slice(&header.to_bytes());
    }
    let mut ecc = vec![0u8; bch.ecc_bytes()];
    for sector in data.chunks(code.sector) {
        bch.encode(sector, &mut ecc)?;
        out.extend_from_slice(&ecc);
        if !no_crc {
            out.extend_from_slice(&crc32c::crc32c(sector).to_le_bytes());
        }
    }
    std::fs::write(parity, &out).with_context(|| format!("cannot write {}", parity.display()))?;
    println!(
        "{sectors} sectors of {} B, BCH m={} t={} poly={:#x}: {} parity bytes each{} → {}",
        code.sector,
        bch.m(),
        bch.t(),
        bch.prim_poly(),
        bch.ecc_bytes(),
        if no_crc {
            " (bare parity, no header or CRC)"
        } else {
            " + CRC32C"
        },
        parity.display()
    );
    Ok(())
}

fn decode(
    code: &DecodeCodeArgs,
    input: &std::path::Path,
    parity: &std::path::Path,
    output: Option<&std::path::Path>,
) -> Result<()> {
    let mut data =
        std::fs::read(input).with_context(|| format!("cannot read {}", input.display()))?;
    let side =
        std::fs::read(parity).with_context(|| format!("cannot read {}", parity.display()))?;
    let (bch, sector, records, crc) = match SideHeader::parse(&side, parity)? {
        Some((h, records)) => {
            code.check_against(&h, parity)?;
            let bch = Bch::with_poly(h.m, h.t, h.poly).with_context(|| {
                format!(
                    "side file {}: its header names no valid code",
                    parity.display()
                )
            })?;
            if bch.ecc_bytes() != h.ecc_bytes as usize || bch.max_data_bytes() < h.sector as usize {
                bail!(
                    "side file {}: its header's {} parity bytes per {}-byte sector do not match the code m = {}, t = {} ({} bytes, sectors up to {})",
                    parity.display(),
                    h.ecc_bytes,
                    h.sector,
                    h.m,
                    h.t,
                    bch.ecc_bytes(),
                    bch.max_data_bytes()
                );
            }
            if data.len() as u64 != h.data_len {
                bail!(
                    "{} is {} bytes, but side file {} protects {} bytes (truncated, extended or another file?)",
                    input.display(),
                    data.len(),
                    parity.display(),
                    h.data_len
                );
            }
            (bch, h.sector as usize, records, true)
        }
        None => {
            let Some(t) = code.t else {
                bail!(
                    "{} has no side-file header (a bare parity file written with --no-crc?): give its code, at least -t",
                    parity.display()
                );
            };
            let sector = code.sector.unwrap_or(512);
            let bch = build_code(t, sector, code.m, code.poly)?;
            let sectors = data.len().div_ceil(sector);
            if side.len() != sectors * bch.ecc_bytes() {
                bail!(
                    "parity file {} has {} bytes; {} sectors × {} parity bytes = {} expected (same -t/--sector/-m as encode?)",
                    parity.display(),
                    side.len(),
                    sectors,
                    bch.ecc_bytes(),
                    sectors * bch.ecc_bytes()
                );
            }
            (bch, sector, &side[..], false)
        }
    };
    let n = bch.ecc_bytes();
    let record = n + if crc { 4 } else { 0 };
    let sectors = data.len().div_ceil(sector);
    let (mut corrected, mut failed, mut caught) = (0u64, Vec::new(), 0u64);
    let mut ecc = vec![0u8; n];
    let mut backup = Vec::with_capacity(sector);
    for (i, (sector, rec)) in data
        .chunks_mut(sector)
        .zip(records.chunks_exact(record))
        .enumerate()
    {
        ecc.copy_from_slice(&rec[..n]);
        backup.clear();
        backup.extend_from_slice(sector);
        match bch.decode(sector, &mut ecc) {
            Ok(bits) => {
                let expected = crc.then(|| u32::from_le_bytes(rec[n..].try_into().unwrap()));
                if expected.is_some_and(|c| crc32c::crc32c(sector) != c) {
                    // Decoded to another codeword: leave the sector as read.
                    sector.copy_from_slice(&backup);
                    failed.push(i);
                    caught += 1;
                } else {
                    corrected += bits as u64;
                }
            }
            Err(ecc::EccError::Uncorrectable) => failed.push(i),
            Err(e) => return Err(e.into()),
        }
    }
    let target = output.unwrap_or(input);
    std::fs::write(target, &data).with_context(|| format!("cannot write {}", target.display()))?;
    println!(
        "{sectors} sectors: {corrected} bits corrected, {} uncorrectable{} → {}",
        failed.len(),
        if crc {
            format!(" ({caught} of them miscorrections caught by CRC32C)")
        } else {
            " (bare parity: miscorrections cannot be detected)".to_string()
        },
        target.display()
    );
    if !failed.is_empty() {
        // The first ones by index, so a badly damaged file does not flood the terminal.
        const SHOWN: usize = 32;
        let more = failed.len().saturating_sub(SHOWN);
        failed.truncate(SHOWN);
        if more > 0 {
            bail!("uncorrectable sectors: {failed:?} and {more} more");
        }
        bail!("uncorrectable sectors: {failed:?}");
    }
    Ok(())
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
    for (t, errors) in [(8u32, 4usize), (40, 20), (60, 30)] {
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
