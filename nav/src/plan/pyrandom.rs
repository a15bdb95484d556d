//! CPython's `random` module, as far as Nav2's planner benchmark uses it: the Mersenne
//! Twister MT19937 (Matsumoto and Nishimura, 1998) seeded the way `random.seed(int)` seeds
//! it, and the draws `getrandbits`, `randint` (through `_randbelow`'s rejection of
//! `getrandbits(k)`), `random` and `uniform`, so that `player-nav plan` draws the very
//! start/goal pairs Nav2's `tools/planner_benchmarking/metrics.py` draws with `seed(33)`.
//!
//! Written from the published algorithm and the documented behaviour of CPython 3 (whose
//! `seed(n)` for an integer feeds the 32-bit words of `|n|`, least significant first, to
//! `init_by_array`); the tests compare against python3 itself when it is installed.

/// The generator's state: 624 words and the position of the next one.
#[derive(Clone)]
pub struct PyRandom {
    mt: [u32; N],
    next: usize,
}

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER: u32 = 0x8000_0000;
const LOWER: u32 = 0x7fff_ffff;

impl PyRandom {
    /// The generator after Python's `random.seed(seed)` for a non-negative integer.
    pub fn new(seed: u64) -> PyRandom {
        let key: Vec<u32> = if seed >> 32 == 0 {
            vec![seed as u32]
        } else {
            vec![seed as u32, (seed >> 32) as u32]
        };
        let mut r = PyRandom::from_genrand(19_650_218);
        r.init_by_array(&key);
        r
    }

    /// MT19937's `init_genrand`.
    fn from_genrand(s: u32) -> PyRandom {
        let mut mt = [0u32; N];
        mt[0] = s;
        for i in 1..N {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        PyRandom { mt, next: N }
    }

    /// MT19937's `init_by_array`.
    fn init_by_array(&mut self, key: &[u32]) {
        let mt = &mut self.mt;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        self.next = N;
    }

    /// Regenerates the 624 words.
    fn twist(&mut self) {
        let mt = &mut self.mt;
        for k in 0..N {
            let y = (mt[k] & UPPER) | (mt[(k + 1) % N] & LOWER);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            mt[k] = mt[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.next = 0;
    }

    /// The next 32-bit output (MT19937's `genrand_int32`, tempered).
    pub fn next_u32(&mut self) -> u32 {
        if self.next >= N {
            self.twist();
        }
        let mut y = self.mt[self.next];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// Python's `random.random()`: 53 random bits as a float in [0, 1).
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// Python's `random.uniform(a, b)`: `a + (b - a) * random()`.
    pub fn uniform(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.random()
    }

    /// Python's `random.getrandbits(k)` for 1 <= k <= 64: words filled from the least
    /// significant, the last one keeping its top bits.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        assert!((1..=64).contains(&k), "getrandbits: k = {k}");
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        low | (high << 32)
    }

    /// Python's `_randbelow(n)` (n >= 1): `getrandbits(n.bit_length())`, drawn again until
    /// below `n`.
    pub fn randbelow(&mut self, n: u64) -> u64 {
        assert!(n >= 1, "randbelow(0)");
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// Python's `random.randint(a, b)`: `a + _randbelow(b - a + 1)`, both ends included.
    pub fn randint(&mut self, a: i64, b: i64) -> i64 {
        assert!(a <= b, "randint({a}, {b})");
        a + self.randbelow((b - a + 1) as u64) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Literal values printed by CPython 3.11.7:
    //   random.seed(33)
    //   [random.randint(100, 1900) for _ in range(6)], random.random(),
    //   random.uniform(0, 1), random.getrandbits(32)
    //   random.seed(0); random.getrandbits(32), random.randint(0, 10)
    //   random.seed(2**40 + 5); random.getrandbits(32)
    #[test]
    fn literal_values_from_cpython() {
        let mut r = PyRandom::new(33);
        let ints: Vec<i64> = (0..6).map(|_| r.randint(100, 1900)).collect();
        assert_eq!(ints, [1268, 442, 1394, 577, 1773, 1821]);
        assert_eq!(r.random(), 0.2772908544463448);
        assert_eq!(r.uniform(0.0, 1.0), 0.6518599680085778);
        assert_eq!(r.getrandbits(32), 3826003908);
        let mut r = PyRandom::new(0);
        assert_eq!(r.getrandbits(32), 3626764237);
        assert_eq!(r.randint(0, 10), 6);
        let mut r = PyRandom::new((1 << 40) + 5);
        assert_eq!(r.getrandbits(32), 2166296868);
    }

    /// Runs python3 (when there is one) and compares a long mixed sequence of draws.
    #[test]
    fn same_draws_as_python3() {
        let script = "import random\n\
            random.seed(33)\n\
            out = []\n\
            for i in range(400):\n\
            \x20   out.append(str(random.randint(100, 1900)))\n\
            \x20   out.append(str(random.randint(0, 2**40)))\n\
            \x20   out.append(repr(random.uniform(0, 1)))\n\
            \x20   out.append(str(random.getrandbits(45)))\n\
            print(' '.join(out))\n";
        let output = match std::process::Command::new("python3")
            .args(["-c", script])
            .output()
        {
            Ok(o) if o.status.success() => o,
            _ => {
                eprintln!("python3 not available: compared with the literal values only");
                return;
            }
        };
        let text = String::from_utf8(output.stdout).unwrap();
        let expected: Vec<&str> = text.split_whitespace().collect();
        let mut r = PyRandom::new(33);
        assert_eq!(expected.len(), 4 * 400);
        for (k, e) in expected.chunks(4).enumerate() {
            assert_eq!(r.randint(100, 1900).to_string(), e[0], "draw {k}");
            assert_eq!(r.randint(0, 1 << 40).to_string(), e[1], "draw {k}");
            // Floats compared as values (Python's repr and Rust's Debug differ in exponents).
            assert_eq!(
                r.uniform(0.0, 1.0),
                e[2].parse::<f64>().unwrap(),
                "draw {k}"
            );
            assert_eq!(r.getrandbits(45).to_string(), e[3], "draw {k}");
        }
    }
}
