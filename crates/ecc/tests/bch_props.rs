//! Property tests of the BCH codec: any e ≤ t bit flips anywhere in data or parity are
//! corrected exactly, for every sector size and a spread of t; more than t never panics and
//! is either reported uncorrectable or decodes to some codeword.

use ecc::{Bch, EccError};
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Codes built once per (sector, t): construction is the slow part.
type Codes = Mutex<HashMap<(usize, u32), Arc<Bch>>>;

fn code(sector: usize, t: u32) -> Arc<Bch> {
    static CODES: OnceLock<Codes> = OnceLock::new();
    let map = CODES.get_or_init(Default::default);
    map.lock()
        .unwrap()
        .entry((sector, t))
        .or_insert_with(|| Arc::new(Bch::for_sector(sector, t).unwrap()))
        .clone()
}

const SECTORS: [usize; 4] = [512, 1024, 2048, 4096];
const TS: [u32; 8] = [1, 2, 3, 4, 8, 16, 40, 64];

fn flip(data: &mut [u8], ecc: &mut [u8], bit: usize, ecc_bits: usize) {
    let dbits = data.len() * 8;
    if bit < dbits {
        data[bit / 8] ^= 0x80 >> (bit % 8);
    } else {
        let q = (bit - dbits) % ecc_bits;
        ecc[q / 8] ^= 0x80 >> (q % 8);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn up_to_t_errors_are_corrected(si in 0usize..4, ti in 0usize..8, seed in any::<u64>(),
                                    e_frac in 0.0f64..=1.0, picks in prop::collection::vec(any::<u64>(), 64)) {
        let sector = SECTORS[si];
        let t = TS[ti];
        let bch = code(sector, t);
        let mut rng = seed | 1;
        let data: Vec<u8> = (0..sector).map(|_| { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; rng as u8 }).collect();
        let ecc = bch.encode_vec(&data).unwrap();
        let e = ((t as f64) * e_frac).round() as usize;
        let total = sector * 8 + bch.ecc_bits() as usize;
        let mut positions: Vec<usize> = Vec::new();
        for p in &picks {
            if positions.len() == e { break; }
            let b = (*p % total as u64) as usize;
            if !positions.contains(&b) { positions.push(b); }
        }
        let mut d = data.clone();
        let mut c = ecc.clone();
        for &b in &positions { flip(&mut d, &mut c, b, bch.ecc_bits() as usize); }
        let n = bch.decode(&mut d, &mut c).unwrap();
        prop_assert_eq!(n as usize, positions.len());
        prop_assert_eq!(&d, &data);
        prop_assert_eq!(&c, &ecc);
    }

    #[test]
    fn beyond_t_never_panics(si in 0usize..4, ti in 0usize..6, extra in 1usize..20, seed in any::<u64>()) {
        let sector = SECTORS[si];
        let t = TS[ti];
        let bch = code(sector, t);
        let data = vec![(seed & 0xFF) as u8; sector];
        let ecc = bch.encode_vec(&data).unwrap();
        let mut d = data.clone();
        let mut c = ecc.clone();
        let total = sector * 8;
        let mut x = seed | 1;
        let mut used = Vec::new();
        while used.len() < t as usize + extra {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            let b = (x % total as u64) as usize;
            if !used.contains(&b) { used.push(b); flip(&mut d, &mut c, b, bch.ecc_bits() as usize); }
        }
        match bch.decode(&mut d, &mut c) {
            Err(EccError::Uncorrectable) => {}
            Ok(_) => {
                // A miscorrection lands on a valid codeword, never on the original.
                prop_assert_ne!(&d, &data);
                let again = bch.encode_vec(&d).unwrap();
                prop_assert_eq!(again, c);
            }
            Err(e) => prop_assert!(false, "unexpected {e}"),
        }
    }
}

#[test]
fn bad_parameters_are_named() {
    assert_eq!(Bch::new(13, 0).unwrap_err(), EccError::ZeroT);
    assert_eq!(Bch::new(4, 1).unwrap_err(), EccError::FieldDegree { m: 4 });
    assert_eq!(
        Bch::new(18, 1).unwrap_err(),
        EccError::FieldDegree { m: 18 }
    );
    assert!(matches!(
        Bch::new(13, 700).unwrap_err(),
        EccError::TooLargeT { t: 700, m: 13, .. }
    ));
    assert!(matches!(
        Bch::with_poly(8, 2, 0x11b).unwrap_err(),
        EccError::NotPrimitive { .. }
    ));
    let b = Bch::new(13, 8).unwrap();
    assert_eq!(b.max_data_bytes(), (8191 - 104) / 8);
    let mut ecc = vec![0u8; b.ecc_bytes() - 1];
    assert_eq!(
        b.encode(&[0; 16], &mut ecc).unwrap_err(),
        EccError::EccLength {
            got: 12,
            expected: 13
        }
    );
    let mut ecc = vec![0u8; b.ecc_bytes()];
    assert_eq!(
        b.encode(&vec![0; 1011], &mut ecc).unwrap_err(),
        EccError::DataTooLong {
            len: 1011,
            max: 1010
        }
    );
    assert!(matches!(
        Bch::for_sector(1 << 20, 8).unwrap_err(),
        EccError::SectorTooLarge { .. }
    ));
}

#[test]
fn sector_sizes_pick_the_smallest_field() {
    assert_eq!(Bch::for_sector(512, 8).unwrap().m(), 13);
    assert_eq!(Bch::for_sector(1024, 8).unwrap().m(), 14);
    assert_eq!(Bch::for_sector(2048, 8).unwrap().m(), 15);
    assert_eq!(Bch::for_sector(4096, 8).unwrap().m(), 16);
    assert_eq!(Bch::for_sector(4096, 64).unwrap().m(), 16);
    assert_eq!(Bch::for_sector(8192, 40).unwrap().m(), 17);
}

#[test]
fn all_default_polynomials_are_primitive() {
    for m in 5..=17 {
        ecc::gf::Field::new(m, ecc::gf::default_poly(m).unwrap()).unwrap();
    }
}

#[test]
fn chien_search_agrees_with_the_trace_decoder() {
    // Cross-check the Chien-free decoder: flip known bits, decode, and confirm by brute
    // force (evaluating the codeword syndromes) that the result is a codeword.
    let bch = Bch::new(13, 8).unwrap();
    let gf = bch.field();
    for seed in 0..50u64 {
        let data: Vec<u8> = (0..512).map(|i| (i as u64 * 31 + seed * 7) as u8).collect();
        let ecc = bch.encode_vec(&data).unwrap();
        let mut d = data.clone();
        let mut c = ecc.clone();
        let e = (seed % 9) as usize;
        let mut pos = Vec::new();
        for k in 0..e {
            let b = ((seed * 1_000_003 + k as u64 * 7919) % (512 * 8)) as usize;
            if !pos.contains(&b) {
                pos.push(b);
                d[b / 8] ^= 0x80 >> (b % 8);
            }
        }
        // Chien-style check: the syndromes of the received word at α^1..α^2t vanish only
        // for codewords. Evaluate the full codeword polynomial directly.
        let syndromes = |d: &[u8], c: &[u8]| -> Vec<u32> {
            let l = bch.ecc_bits() as usize;
            let nbits = d.len() * 8 + l;
            (1..=2 * bch.t() as u64)
                .map(|j| {
                    let mut s = 0;
                    for q in 0..nbits {
                        let bit = if q < d.len() * 8 {
                            d[q / 8] >> (7 - q % 8) & 1
                        } else {
                            let r = q - d.len() * 8;
                            c[r / 8] >> (7 - r % 8) & 1
                        };
                        if bit == 1 {
                            s ^= gf.pow(j * (nbits - 1 - q) as u64);
                        }
                    }
                    s
                })
                .collect()
        };
        assert_eq!(syndromes(&d, &c).iter().all(|&s| s == 0), pos.is_empty());
        assert_eq!(bch.decode(&mut d, &mut c).unwrap() as usize, pos.len());
        assert!(syndromes(&d, &c).iter().all(|&s| s == 0));
        assert_eq!(d, data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    /// The accelerated encoder (where the CPU has one) and the portable table encoder agree
    /// on every code size and data length, including the tails the folding leaves.
    #[test]
    fn accelerated_and_portable_encoders_agree(m in 5u32..=16, tsel in 0u32..100, len_sel in 0usize..5000, seed in any::<u64>()) {
        let n = (1u32 << m) - 1;
        let t = 1 + tsel % ((n - 8) / m).clamp(1, 12);
        let Ok(fast) = Bch::new(m, t) else { return Ok(()) };
        let slow = Bch::new(m, t).unwrap().portable();
        let len = len_sel % fast.max_data_bytes() + 1;
        let data = {
            let mut x = seed | 1;
            (0..len).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect::<Vec<u8>>()
        };
        prop_assert_eq!(fast.encode_vec(&data).unwrap(), slow.encode_vec(&data).unwrap());
        let narrow = Bch::new(m, t).unwrap().without_avx512();
        prop_assert_eq!(narrow.encode_vec(&data).unwrap(), slow.encode_vec(&data).unwrap());
        // The scalar models of the four-lane and the 128-bit paths, on any CPU.
        let model = Bch::new(m, t).unwrap().lane_models();
        prop_assert_eq!(model.encode_vec(&data).unwrap(), slow.encode_vec(&data).unwrap());
        let model = model.without_avx512();
        prop_assert_eq!(model.encode_vec(&data).unwrap(), slow.encode_vec(&data).unwrap());
        let mut d = data.clone();
        let mut e = slow.encode_vec(&data).unwrap();
        d[len / 2] ^= 0x10;
        prop_assert_eq!(slow.decode(&mut d, &mut e).unwrap(), 1);
        prop_assert_eq!(&d, &data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// Parity over 128 bits: the carry-less-multiply encoder on the CPU (where it has
    /// PCLMULQDQ), its scalar model (everywhere) and the table encoder agree on every code
    /// size and data length, runs of every length and tails included.
    #[test]
    fn wide_parity_encoders_agree(m in 9u32..=17, tsel in any::<u32>(), len_sel in any::<usize>(), seed in any::<u64>()) {
        let n = (1u32 << m) - 1;
        let min_t = 128 / m + 1;
        let max_t = ((n - 8) / m).min(2048 / m);
        prop_assume!(min_t <= max_t);
        let t = min_t + tsel % (max_t - min_t + 1);
        let Ok(fast) = Bch::new(m, t) else { return Ok(()) };
        let len = len_sel % fast.max_data_bytes().min(9000) + 1;
        let data = {
            let mut x = seed | 1;
            (0..len).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect::<Vec<u8>>()
        };
        let table = Bch::new(m, t).unwrap().portable().encode_vec(&data).unwrap();
        prop_assert_eq!(&fast.encode_vec(&data).unwrap(), &table, "m={} t={} len={}", m, t, len);
        let model = Bch::new(m, t).unwrap().lane_models();
        prop_assert_eq!(&model.encode_vec(&data).unwrap(), &table, "model m={} t={} len={}", m, t, len);
    }
}

fn check_fixed<const N: usize>(code: &Bch, data: &[u8]) -> Result<(), TestCaseError> {
    if N > code.max_data_bytes() {
        let e = code.fixed_encoder::<N>().map(|_| ());
        prop_assert!(matches!(e, Err(EccError::DataTooLong { .. })), "{:?}", e);
        return Ok(());
    }
    let fixed = code.fixed_encoder::<N>().unwrap();
    let msg: [u8; N] = data[..N].try_into().unwrap();
    let mut want = vec![0u8; code.ecc_bytes()];
    let mut got = vec![0u8; code.ecc_bytes()];
    code.encode(&msg, &mut want).unwrap();
    fixed.encode(&msg, &mut got).unwrap();
    prop_assert_eq!(&want, &got);
    let table = fixed.clone().portable();
    prop_assert_eq!(table.parity(&msg), fixed.parity(&msg));
    let short = fixed.encode(&msg, &mut got[1..]);
    prop_assert!(
        matches!(short, Err(EccError::EccLength { .. })),
        "{:?}",
        short
    );
    Ok(())
}

proptest! {
    /// The table-driven fixed-length encoder writes the same parity as the general encoder,
    /// for short codes of every parity width it takes (up to 64 bits) and a few lengths.
    #[test]
    fn fixed_encoder_matches_encode(
        (m, t) in prop_oneof![Just((8u32, 4u32)), Just((8, 8)), Just((13, 4)), Just((7, 2)), Just((10, 6))],
        data in proptest::collection::vec(any::<u8>(), 24),
    ) {
        let code = Bch::new(m, t).unwrap();
        check_fixed::<1>(&code, &data)?;
        check_fixed::<7>(&code, &data)?;
        check_fixed::<24>(&code, &data)?;
    }
}

#[test]
fn fixed_encoder_rejects_wide_parity() {
    let code = Bch::new(13, 8).unwrap(); // 104 parity bits
    assert!(matches!(
        code.fixed_encoder::<16>(),
        Err(EccError::ParityTooWide { bits: 104 })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// `encode_sectors` writes what `encode` writes sector by sector: whatever the code, the
    /// sector size (whole 64-byte rounds or not, longer than one run or not) and the count
    /// (groups of four and a remainder), with and without the AVX-512 path.
    #[test]
    fn encode_sectors_matches_encode(m in 8u32..=15, t in 1u32..=9, rounds in 1usize..=20, odd in 0usize..3, count in 1usize..=9, seed in any::<u64>()) {
        let Ok(code) = Bch::new(m, t) else { return Ok(()) };
        let sector = (64 * rounds + [0, 16, 5][odd]).min(code.max_data_bytes());
        if sector == 0 { return Ok(()) }
        let data = {
            let mut x = seed | 1;
            (0..sector * count).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect::<Vec<u8>>()
        };
        let n = code.ecc_bytes();
        let table = code.clone().portable();
        let want: Vec<u8> = data.chunks(sector).flat_map(|s| table.encode_vec(s).unwrap()).collect();
        // The CPU's paths, and the scalar models of the four-lane and 128-bit paths (run
        // whatever the CPU has: the AVX-512 logic is checked without AVX-512).
        let model = code.clone().lane_models();
        for c in [code.clone(), code.clone().without_avx512(), table, model.clone(), model.without_avx512()] {
            let mut got = vec![0u8; n * count];
            c.encode_sectors(&data, sector, &mut got).unwrap();
            prop_assert_eq!(&got, &want);
        }
        let mut short = vec![0u8; n * count - 1];
        let e = code.encode_sectors(&data, sector, &mut short);
        prop_assert!(matches!(e, Err(EccError::EccLength { .. })), "{:?}", e);
        if sector > 1 {
            let mut out = vec![0u8; n * count];
            let e = code.encode_sectors(&data[1..], sector, &mut out);
            prop_assert!(matches!(e, Err(EccError::SectorSplit { .. })), "{:?}", e);
        }
    }
}
