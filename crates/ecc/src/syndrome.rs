//! Odd syndromes from the remainder, one small CRC per minimal polynomial.
//!
//! S_j = r(α^j) depends only on r modulo the minimal polynomial c_j of α^j (degree d_j ≤ m),
//! so each odd syndrome is a CRC of the parity difference with polynomial c_j — one
//! 256-entry table lookup per byte, with t independent chains advancing together — followed
//! by evaluating the d_j-bit remainder at α^j. The CRC register is left-aligned in 32 bits
//! and takes each byte at the top, so it computes R·x^(d_j) mod c_j (R the difference
//! polynomial, which is r·x^pad for the zero padding bits of the last parity byte); the
//! factor α^(j·(d_j + pad)) is divided out at the end by one multiplication.

use crate::gf::Field;
use alloc::vec;
use alloc::vec::Vec;

/// The tables for the odd syndromes S_1, S_3, …, S_(2t−1) of one code.
#[derive(Debug, Clone)]
pub(crate) struct Syndromes {
    /// Per odd syndrome: the CRC table of c_j, `table[v]` = v·x^32 mod c_j·x^(32−d_j).
    crc: Vec<[u32; 256]>,
    /// Per odd syndrome: d_j.
    deg: Vec<u8>,
    /// Per odd syndrome: α^(j·b) for b < d_j, at `eval[i * MAX_M + b]`.
    eval: Vec<u32>,
    /// Per odd syndrome: log α^(−j·(d_j + pad)).
    undo: Vec<u32>,
}

const MAX_M: usize = crate::gf::MAX_M as usize;

impl Syndromes {
    /// The tables for a code of strength `t` whose parity difference has `pad` zero bits
    /// after the remainder's lowest coefficient.
    pub(crate) fn new(gf: &Field, t: u32, pad: u32) -> Syndromes {
        let n = gf.n() as u64;
        let t = t as usize;
        let mut crc = vec![[0u32; 256]; t];
        let mut deg = vec![0u8; t];
        let mut eval = vec![0u32; t * MAX_M];
        let mut undo = vec![0u32; t];
        for i in 0..t {
            let j = (2 * i + 1) as u64;
            // c_j = Π over the cyclotomic coset of j of (x − α^(j·2^k)); binary.
            let mut c: Vec<u32> = vec![1];
            let mut e = j % n;
            loop {
                let a = gf.pow(e);
                let mut next = vec![0u32; c.len() + 1];
                for (k, &ck) in c.iter().enumerate() {
                    next[k + 1] ^= ck;
                    next[k] ^= gf.mul(ck, a);
                }
                c = next;
                e = e * 2 % n;
                if e == j % n {
                    break;
                }
            }
            debug_assert!(c.iter().all(|&x| x <= 1));
            let d = c.len() - 1;
            // c without its leading term, aligned so x^(d−1) sits at bit 31.
            let low = (0..d).fold(0u32, |p, k| p | c[k] << k) << (32 - d);
            for (v, slot) in crc[i].iter_mut().enumerate() {
                let mut r = (v as u32) << 24;
                for _ in 0..8 {
                    r = if r >> 31 == 1 { r << 1 ^ low } else { r << 1 };
                }
                *slot = r;
            }
            deg[i] = d as u8;
            for b in 0..d {
                eval[i * MAX_M + b] = gf.pow(j * b as u64);
            }
            undo[i] = ((n - j * (d as u64 + pad as u64) % n) % n) as u32;
        }
        Syndromes {
            crc,
            deg,
            eval,
            undo,
        }
    }

    /// S_1..S_2t into `syn[1..=2t]` (`syn[0]` unused) from the parity difference `diff`.
    pub(crate) fn compute(&self, gf: &Field, diff: &[u8], syn: &mut [u32]) {
        let t = self.crc.len();
        let mut acc = vec![0u32; t];
        for &b in diff {
            for (a, table) in acc.iter_mut().zip(&self.crc) {
                *a = *a << 8 ^ table[((*a >> 24) as u8 ^ b) as usize];
            }
        }
        for (i, &a) in acc.iter().enumerate() {
            let d = self.deg[i] as usize;
            let rem = a >> (32 - d);
            let mut v = 0u32;
            for (b, &p) in self.eval[i * MAX_M..][..d].iter().enumerate() {
                v ^= p & (rem >> b & 1).wrapping_neg();
            }
            syn[2 * i + 1] = if v == 0 {
                0
            } else {
                gf.exp2n(gf.log(v) + self.undo[i])
            };
        }
        for j in 1..=t {
            syn[2 * j] = gf.square(syn[j]);
        }
    }
}
