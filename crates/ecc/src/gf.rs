//! Arithmetic in GF(2^m), m = 5..=17, by log/antilog tables.

use crate::EccError;
use alloc::vec;
use alloc::vec::Vec;

/// Smallest supported field degree.
pub const MIN_M: u32 = 5;
/// Largest supported field degree.
pub const MAX_M: u32 = 17;

/// The default primitive polynomial of GF(2^m), bit i the coefficient of x^i.
///
/// - m = 5..=15: Linux `lib/bch.c`'s `prim_poly_tab` (which is, for each m, the numerically
///   smallest primitive polynomial of degree m), so parity is byte-identical to the kernel's.
/// - m = 16: 0x1002d = x^16 + x^5 + x^3 + x^2 + 1, and m = 17: 0x20009 = x^17 + x^3 + 1 —
///   our extension by the same rule (the smallest primitive polynomial of each degree;
///   `Field::new` checks primitivity). Upstream Linux stops at m = 15 (`BCH_MAX_M`) and
///   has no default beyond; the `bchlib` Python package's copy of lib/bch.c raises that
///   limit but still needs the polynomial passed explicitly, which is how the
///   compatibility tests and `scripts/bench-ecc.sh` compare m = 16 with it.
pub fn default_poly(m: u32) -> Option<u32> {
    const TAB: [u32; 13] = [
        0x25, 0x43, 0x83, 0x11d, 0x211, 0x409, 0x805, 0x1053, 0x201b, 0x402b, 0x8003, 0x1002d,
        0x20009,
    ];
    (MIN_M..=MAX_M)
        .contains(&m)
        .then(|| TAB[(m - MIN_M) as usize])
}

/// GF(2^m) with a primitive polynomial. Elements are `u32` < 2^m; `alpha` = 2.
#[derive(Debug, Clone)]
pub struct Field {
    m: u32,
    n: u32,
    poly: u32,
    /// exp[i] = α^i for i in 0..2n (doubled so sums of two logs need no reduction).
    exp: Vec<u32>,
    /// log[x] for x ≠ 0; log[0] is unused.
    log: Vec<u32>,
}

impl Field {
    /// The field GF(2^m) built on `poly` (degree m, must be primitive).
    pub fn new(m: u32, poly: u32) -> Result<Field, EccError> {
        if !(MIN_M..=MAX_M).contains(&m) {
            return Err(EccError::FieldDegree { m });
        }
        if poly >> m != 1 {
            return Err(EccError::NotPrimitive { m, poly });
        }
        let n = (1u32 << m) - 1;
        let mut exp = vec![0u32; 2 * n as usize + 2];
        let mut log = vec![0u32; n as usize + 1];
        let mut x = 1u32;
        for i in 0..n {
            if i > 0 && x == 1 {
                // α has order i < n: the polynomial is not primitive.
                return Err(EccError::NotPrimitive { m, poly });
            }
            exp[i as usize] = x;
            log[x as usize] = i;
            x <<= 1;
            if x >> m != 0 {
                x ^= poly;
            }
        }
        if x != 1 {
            return Err(EccError::NotPrimitive { m, poly });
        }
        for i in n as usize..exp.len() {
            exp[i] = exp[i - n as usize];
        }
        Ok(Field {
            m,
            n,
            poly,
            exp,
            log,
        })
    }

    /// The degree m.
    pub fn m(&self) -> u32 {
        self.m
    }

    /// The multiplicative order n = 2^m − 1.
    pub fn n(&self) -> u32 {
        self.n
    }

    /// The primitive polynomial.
    pub fn poly(&self) -> u32 {
        self.poly
    }

    /// α^i for any i ≥ 0.
    #[inline]
    pub fn pow(&self, i: u64) -> u32 {
        self.exp[(i % self.n as u64) as usize]
    }

    /// α^i for i < 2n (no reduction).
    #[inline]
    pub(crate) fn exp2n(&self, i: u32) -> u32 {
        self.exp[i as usize]
    }

    /// log_α(x), x ≠ 0.
    #[inline]
    pub fn log(&self, x: u32) -> u32 {
        debug_assert!(x != 0);
        self.log[x as usize]
    }

    /// x · y.
    #[inline]
    pub fn mul(&self, x: u32, y: u32) -> u32 {
        if x == 0 || y == 0 {
            0
        } else {
            self.exp[(self.log[x as usize] + self.log[y as usize]) as usize]
        }
    }

    /// x / y, y ≠ 0.
    #[inline]
    pub fn div(&self, x: u32, y: u32) -> u32 {
        debug_assert!(y != 0);
        if x == 0 {
            0
        } else {
            self.exp[(self.log[x as usize] + self.n - self.log[y as usize]) as usize]
        }
    }

    /// 1 / x, x ≠ 0.
    #[inline]
    pub fn inv(&self, x: u32) -> u32 {
        self.exp[(self.n - self.log[x as usize]) as usize]
    }

    /// x².
    #[inline]
    pub fn square(&self, x: u32) -> u32 {
        if x == 0 {
            0
        } else {
            self.exp[(2 * self.log[x as usize]) as usize]
        }
    }

    /// The absolute trace Tr(x) = x + x² + … + x^(2^(m−1)) ∈ {0, 1}.
    pub fn trace(&self, x: u32) -> u32 {
        let mut t = x;
        let mut y = x;
        for _ in 1..self.m {
            y = self.square(y);
            t ^= y;
        }
        debug_assert!(t <= 1);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented rule: each default is the numerically smallest primitive polynomial
    /// of its degree (Linux's table for m ≤ 15, our extension for 16 and 17).
    #[test]
    fn defaults_are_the_smallest_primitive_polynomials() {
        for m in MIN_M..=MAX_M {
            let d = default_poly(m).unwrap();
            assert!(Field::new(m, d).is_ok(), "m={m}");
            for p in (1u32 << m | 1..d).step_by(2) {
                assert!(
                    Field::new(m, p).is_err(),
                    "m={m}: {p:#x} < {d:#x} is primitive"
                );
            }
        }
        assert_eq!(
            default_poly(16),
            Some(1 << 16 | 1 << 5 | 1 << 3 | 1 << 2 | 1)
        );
        assert_eq!(default_poly(17), Some(1 << 17 | 1 << 3 | 1));
    }
}
