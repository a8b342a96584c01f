//! Cache hints for the simulator's hot paths: they change no state and never fault.

/// Hints the CPU to load `v[i]` into cache (nothing where the target has no hint, or when
/// `i` is out of range).
#[inline(always)]
pub fn prefetch<T>(v: &[T], i: usize) {
    if let Some(x) = v.get(i) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint; `x` is a valid reference.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                (x as *const T).cast::<i8>(),
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = x;
    }
}

/// Hints the CPU to load every cache line of `bytes` into the second-level cache (a whole
/// stored page about to be copied out: near enough to copy fast, without flushing the
/// first-level cache).
#[inline]
pub fn prefetch_lines(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in bytes.chunks(64) {
        // SAFETY: a prefetch is a hint; `line` is a valid, non-empty slice.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T1 }>(
                line.as_ptr().cast::<i8>(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}
