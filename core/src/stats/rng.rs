//! xorshift64*: a small seeded generator, the same sequence on every machine. It drives the
//! bootstrap (seeded from the samples) and the simulations and fuzz suites of the tests.

/// A seeded xorshift64* generator.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; zero, xorshift's one fixed point, is replaced).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed })
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A whole number below `n` (0 when `n` is 0): the high half of a 64 × 64-bit product,
    /// as even as a modulo (bias below n / 2^64) without its division, which the rank
    /// test's Monte Carlo draws millions of times.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n.max(1) as u128) >> 64) as usize
    }

    /// A number in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}
