//! delay: queued work runs later, by a seeded, reproducible amount, so that a
//! program that reads results without synchronising sees stale data, as it may on a
//! GPU.
//!
//! With the tool on, `crate::stream` runs the work of the default streams on a
//! worker of their context instead of on the calling thread (a synchronous copy or
//! memset still returns once it is done, as on the driver), and every worker sleeps
//! before each operation for [`amount`]: a function of the seed
//! (`SOFTCUDA_SANITIZE_SEED`, default 1), the stream's serial number and the
//! operation's index on it — the same delays on every run of one program.

use std::sync::OnceLock;
use std::time::Duration;

/// The longest delay before one operation.
pub const MAX: Duration = Duration::from_micros(400);

/// Whether the tool is on.
#[inline]
pub fn on() -> bool {
    super::on(super::DELAY)
}

/// The seed: `SOFTCUDA_SANITIZE_SEED` (decimal or `0x` hexadecimal), else 1.
pub fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        std::env::var("SOFTCUDA_SANITIZE_SEED")
            .ok()
            .and_then(|v| match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).ok(),
                None => v.parse().ok(),
            })
            .unwrap_or(1)
    })
}

/// How long operation `op` (0, 1, ...) of stream `serial` waits before it runs:
/// up to [`MAX`], a hash of the seed, the stream and the operation.
pub fn amount(serial: u64, op: u64) -> Duration {
    let mut z = seed() ^ serial.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ op.rotate_left(32);
    // splitmix64's finaliser.
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let max = MAX.as_micros() as u64;
    Duration::from_micros(z % (max + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_are_reproducible_and_bounded() {
        assert_eq!(amount(3, 7), amount(3, 7));
        let all: Vec<Duration> = (0..64).map(|i| amount(1, i)).collect();
        assert!(all.iter().all(|d| *d <= MAX));
        assert!(all.iter().any(|d| *d != all[0]), "{all:?}");
    }
}
