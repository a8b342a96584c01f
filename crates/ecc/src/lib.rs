//! # ecc — error-correcting codes for NAND flash
//!
//! - [`gf`]: GF(2^m) arithmetic for m = 5..=17 with the Linux default primitive polynomials.
//! - [`Bch`]: binary BCH with programmable t, byte-compatible with Linux `lib/bch.c`, with a
//!   table-driven encoder and a Chien-free decoder.
//! - [`reliability`]: log-space binomial tails, page failure probability (AP eq. 3/4), UBER
//!   (FLARES eq. 1) and their inverses.
//!
//! `no_std` + `alloc`.
#![no_std]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod clmul;

mod bch;
mod bm;
pub mod gf;
mod lanes;
pub mod reliability;
mod roots;
mod syndrome;
mod widepar;

pub use bch::{Bch, FixedEncoder};

use thiserror::Error;

/// Errors of code construction and decoding; each names the offending value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EccError {
    /// t = 0 corrects nothing.
    #[error("correction capability t must be at least 1")]
    ZeroT,
    /// Field degree outside 5..=17.
    #[error("field degree m = {m} is not supported (5..=17)")]
    FieldDegree {
        /// The rejected degree.
        m: u32,
    },
    /// The polynomial is not primitive of degree m.
    #[error("polynomial {poly:#x} is not a primitive polynomial of degree {m}")]
    NotPrimitive {
        /// Field degree.
        m: u32,
        /// The rejected polynomial.
        poly: u32,
    },
    /// t too large for the field.
    #[error("t = {t} is too large for GF(2^{m}) (at most {max})")]
    TooLargeT {
        /// The rejected t.
        t: u32,
        /// Field degree.
        m: u32,
        /// Largest usable t.
        max: u32,
    },
    /// No supported field holds a sector this large at this t.
    #[error("sector of {len} bytes with t = {t} fits no supported field")]
    SectorTooLarge {
        /// Sector length in bytes.
        len: usize,
        /// Correction capability.
        t: u32,
    },
    /// Data longer than the code protects.
    #[error("data of {len} bytes is longer than the code's {max} bytes")]
    DataTooLong {
        /// Data length given.
        len: usize,
        /// Longest allowed.
        max: usize,
    },
    /// Parity longer than a table-driven encoder holds (64 bits).
    #[error("parity of {bits} bits is too wide for a table-driven encoder (at most 64)")]
    ParityTooWide {
        /// Parity bits of the code.
        bits: u32,
    },
    /// Data that is not a whole number of sectors.
    #[error("data of {len} bytes is not a whole number of {sector}-byte sectors")]
    SectorSplit {
        /// Data length given.
        len: usize,
        /// Sector length given.
        sector: usize,
    },
    /// Parity buffer of the wrong length.
    #[error("parity is {got} bytes, the code has {expected}")]
    EccLength {
        /// Length given.
        got: usize,
        /// Length required.
        expected: usize,
    },
    /// More errors than the code corrects.
    #[error("uncorrectable: more than t bit errors")]
    Uncorrectable,
}
