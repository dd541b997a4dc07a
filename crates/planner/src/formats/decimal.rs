//! Decimal text to `f64`, correctly rounded, without lookup tables.
//!
//! `str::parse::<f64>` carries a 10 KB table of powers of five (its
//! Eisel-Lemire fast path) that does not compress: a twentieth of the page.
//! This reads the same syntax and returns the same value (IEEE 754 round to
//! nearest, ties to even; a test compares the two on edge cases and random
//! input). Plain numbers, of up to 15 digits and a power of ten of at most 22,
//! take Clinger's exact path: two exact `f64`s and one rounding (W. D.
//! Clinger, "How to Read Floating Point Numbers Accurately", PLDI 1990). The
//! rare rest is computed exactly with big integers, which is slow but small.

/// Parse `[+-]?(digits[.digits]|.digits)([eE][+-]?digits)?`, `inf`,
/// `infinity` or `nan` (any case), as `str::parse::<f64>` does.
pub fn parse_f64(s: &str) -> Option<f64> {
    let (negative, body) = sign(s);
    let word = |w: &str| body.eq_ignore_ascii_case(w);
    let magnitude = if let Some(n) = small_integer(body) {
        n
    } else if word("inf") || word("infinity") {
        f64::INFINITY
    } else if word("nan") {
        f64::NAN
    } else {
        Decimal::read(body)?.to_f64()
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// A plain whole number of up to 15 digits (below 2^53, so exact): most
/// of what a link holds, read without building its decimal.
fn small_integer(text: &str) -> Option<f64> {
    let digits = text.as_bytes();
    let plain = !digits.is_empty() && digits.len() <= 15 && digits.iter().all(u8::is_ascii_digit);
    plain.then(|| digits.iter().fold(0u64, |n, d| n * 10 + (d - b'0') as u64) as f64)
}

/// Whether `text` starts with `-`, and the rest after a `-` or `+`.
fn sign(text: &str) -> (bool, &str) {
    match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    }
}

/// The significant digits (no leading or trailing zeros) and the power of
/// ten: the value is `0.d1d2d3… × 10^point`.
struct Decimal {
    digits: Vec<u8>,
    point: i64,
}

/// Digits kept: a tie between two doubles needs at most 767 significant
/// digits, so later digits only matter as "some were not zero".
const MAX_DIGITS: usize = 800;

impl Decimal {
    fn read(text: &str) -> Option<Decimal> {
        let (mantissa, exponent) = match text.find(['e', 'E']) {
            Some(i) => (&text[..i], Some(&text[i + 1..])),
            None => (text, None),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if int.len() + frac.len() == 0 || !all_digits(int) || !all_digits(frac) {
            return None;
        }
        let exponent = match exponent {
            None => 0,
            Some(e) => read_exponent(e)?,
        };
        let mut digits = Vec::new();
        let mut point = int.len() as i64 + exponent;
        for b in int.bytes().chain(frac.bytes()) {
            if digits.is_empty() && b == b'0' {
                point -= 1;
            } else {
                digits.push(b - b'0');
            }
        }
        while digits.last() == Some(&0) {
            digits.pop();
        }
        if digits.len() > MAX_DIGITS {
            let dropped_nonzero = digits[MAX_DIGITS..].iter().any(|&d| d != 0);
            digits.truncate(MAX_DIGITS);
            if dropped_nonzero {
                digits.push(1);
            }
        }
        Some(Decimal { digits, point })
    }

    fn to_f64(&self) -> f64 {
        let n = self.digits.len() as i64;
        // The value is the integer of `digits` times 10^e.
        let e = self.point - n;
        if self.digits.is_empty() || self.point < -343 {
            return 0.0; // below half the smallest subnormal, 4.9e-324
        }
        if self.point > 310 {
            return f64::INFINITY;
        }
        if n <= 15 && e.abs() <= 22 {
            return self.clinger(e);
        }
        let m = Big::from_digits(&self.digits);
        if e >= 0 {
            let (top, exp2, sticky) = m.times_pow10(e as u32).top_bits();
            round(top, exp2, sticky)
        } else {
            m.over_pow10((-e) as u32)
        }
    }

    /// Both the integer (< 10^15 < 2^53) and 10^|e| (|e| <= 22) are exact
    /// doubles, so one multiplication or division rounds once, correctly.
    fn clinger(&self, e: i64) -> f64 {
        let m = self.digits.iter().fold(0u64, |m, &d| m * 10 + d as u64) as f64;
        let p = (0..e.abs()).fold(1.0, |p, _| p * 10.0);
        if e >= 0 {
            m * p
        } else {
            m / p
        }
    }
}

/// The exponent after `e`: at most 18 digits count; a longer one is
/// saturated (the value is then zero or infinite anyway).
fn read_exponent(text: &str) -> Option<i64> {
    let (negative, digits) = sign(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value = digits
        .bytes()
        .fold(0i64, |v, b| (v * 10 + (b - b'0') as i64).min(1 << 40));
    Some(if negative { -value } else { value })
}

/// A non-negative big integer, 32-bit limbs, least significant first.
#[derive(Clone)]
struct Big(Vec<u32>);

impl Big {
    fn from_digits(digits: &[u8]) -> Big {
        let mut b = Big(Vec::new());
        for &d in digits {
            b.mul_add(10, d as u32);
        }
        b
    }

    fn mul_add(&mut self, mul: u32, add: u32) {
        let mut carry = add as u64;
        for limb in &mut self.0 {
            let v = *limb as u64 * mul as u64 + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    fn times_pow10(mut self, k: u32) -> Big {
        for _ in 0..k {
            self.mul_add(10, 0);
        }
        self
    }

    fn bits(&self) -> u64 {
        match self.0.iter().rposition(|&l| l != 0) {
            Some(i) => i as u64 * 32 + (32 - self.0[i].leading_zeros()) as u64,
            None => 0,
        }
    }

    fn bit(&self, i: u64) -> bool {
        let limb = self.0.get((i / 32) as usize).copied().unwrap_or(0);
        limb >> (i % 32) & 1 == 1
    }

    fn is_zero(&self) -> bool {
        self.0.iter().all(|&l| l == 0)
    }

    /// The top 64 bits, the power of two they are scaled by, and whether any
    /// lower bit is set: `self = top × 2^exp2 (+ less than 2^exp2)`.
    fn top_bits(&self) -> (u64, i64, bool) {
        let n = self.bits();
        let low = n.saturating_sub(64);
        let top = (low..n)
            .rev()
            .fold(0u64, |t, i| t << 1 | self.bit(i) as u64);
        let sticky = (0..low).any(|i| self.bit(i));
        (top, low as i64, sticky)
    }

    fn shifted_left(&self, s: u64) -> Big {
        let (limbs, bits) = ((s / 32) as usize, (s % 32) as u32);
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &l in &self.0 {
            out.push(if bits == 0 { l } else { l << bits | carry });
            carry = if bits == 0 { 0 } else { l >> (32 - bits) };
        }
        out.push(carry);
        Big(out)
    }

    fn ge(&self, other: &Big) -> bool {
        let len = self.0.len().max(other.0.len());
        for i in (0..len).rev() {
            let (a, b) = (self.limb(i), other.limb(i));
            if a != b {
                return a > b;
            }
        }
        true
    }

    fn limb(&self, i: usize) -> u32 {
        self.0.get(i).copied().unwrap_or(0)
    }

    fn subtract(&mut self, other: &Big) {
        let mut borrow = 0i64;
        for i in 0..self.0.len() {
            let v = self.0[i] as i64 - other.limb(i) as i64 - borrow;
            self.0[i] = v.rem_euclid(1 << 32) as u32;
            borrow = (v < 0) as i64;
        }
    }

    /// `self / 10^k`, correctly rounded: a quotient of 65 or 66 bits by
    /// binary long division, and a sticky bit for a non-zero remainder. The
    /// dividend is scaled by `2^shift` (the divisor by `2^-shift` when the
    /// dividend is already the longer one) so that the quotient always fits
    /// a u128 (#25: 2^128.5 overflowed it and read as 0).
    fn over_pow10(&self, k: u32) -> f64 {
        let divisor = Big(vec![1]).times_pow10(k);
        let shift = (divisor.bits() + 65) as i64 - self.bits() as i64;
        let mut rest = self.shifted_left(shift.max(0) as u64);
        let divisor = divisor.shifted_left((-shift).max(0) as u64);
        let mut quotient = 0u128;
        let span = rest.bits().saturating_sub(divisor.bits());
        for i in (0..=span).rev() {
            let d = divisor.shifted_left(i);
            quotient <<= 1;
            if rest.ge(&d) {
                rest.subtract(&d);
                quotient |= 1;
            }
        }
        let q_bits = 128 - quotient.leading_zeros() as i64;
        let drop = (q_bits - 64).max(0);
        let sticky = !rest.is_zero() || quotient & ((1u128 << drop) - 1) != 0;
        round((quotient >> drop) as u64, drop - shift, sticky)
    }
}

/// Round `top × 2^exp2` (`sticky`: plus a little more) to the nearest double,
/// ties to even, subnormals and overflow included.
fn round(top: u64, exp2: i64, sticky: bool) -> f64 {
    if top == 0 {
        return 0.0;
    }
    let lead = 63 - top.leading_zeros() as i64; // the leading bit's place in top
    let e = exp2 + lead; // value in [2^e, 2^(e+1))
    if e > 1023 {
        return f64::INFINITY;
    }
    // Bits of precision kept: 53, fewer for subnormals.
    let keep = if e >= -1022 { 53 } else { 53 - (-1022 - e) };
    let drop = lead + 1 - keep; // low bits of `top` rounded away
    if drop > 64 {
        return 0.0;
    }
    let (mut r, rem, half) = if drop <= 0 {
        (top << -drop, 0u128, 1u128)
    } else {
        let t = top as u128;
        (
            (t >> drop) as u64,
            t & ((1u128 << drop) - 1),
            1u128 << (drop - 1),
        )
    };
    if drop > 0 && (rem > half || (rem == half && (sticky || r & 1 == 1))) {
        r += 1;
    }
    if e < -1022 {
        return f64::from_bits(r); // a subnormal, or the smallest normal after rounding up
    }
    let mut e = e;
    if r >> 53 != 0 {
        r >>= 1;
        e += 1;
        if e > 1023 {
            return f64::INFINITY;
        }
    }
    f64::from_bits(((e + 1023) as u64) << 52 | (r & ((1 << 52) - 1)))
}

#[cfg(test)]
mod tests {
    use super::parse_f64;

    /// Ours against Rust's own correctly rounded reader: the same value, to
    /// the bit, or the same refusal.
    fn same_as_std(s: &str) {
        let ours = parse_f64(s);
        let std = s.parse::<f64>().ok();
        match (ours, std) {
            (Some(a), Some(b)) if a.is_nan() && b.is_nan() => {}
            (Some(a), Some(b)) => assert_eq!(a.to_bits(), b.to_bits(), "{s:?}: {a:e} vs {b:e}"),
            (a, b) => assert_eq!(a, b, "{s:?}"),
        }
    }

    #[test]
    fn edge_cases_read_as_std_reads_them() {
        let cases = [
            // Plain whole numbers: the short path (up to 15 digits) and past it.
            "8",
            "000000000000001",
            "999999999999999",
            "9007199254740993",
            "0",
            "-0",
            "+0",
            "0.0",
            "00.000e5",
            "1",
            "1.",
            ".5",
            "-.5",
            "1e0",
            "1E+2",
            "1e-2",
            "0.1",
            "0.2",
            "0.3",
            "123.456",
            "1e22",
            "1e23",
            "9007199254740993",
            "9007199254740992.5",
            "123456789012345678901234567890",
            "2.2250738585072011e-308",
            "2.2250738585072014e-308",
            "4.9406564584124654e-324",
            "2.4703282292062327e-324",
            "2.4703282292062328e-324",
            "1e-400",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "1e309",
            "inf",
            "-Infinity",
            "NaN",
            "",
            ".",
            "e5",
            "1e",
            "1e+",
            "--1",
            "1.2.3",
            "1_0",
            " 1",
            "1 ",
            "0x10",
            "1e99999999999999999999",
            "1e-99999999999999999999",
            "0.000001",
            "131072",
            "0.478",
            "1e-05",
            "500000.0",
            "3.0e-7",
            "6.02214076e23",
            // #25: 2^128 with a fraction overflowed the quotient and read as 0.
            "340282366920938463463374607431768211456.5",
            "340282366920938463463374607431768211455.9999999999999999999999",
            "1234567890123456789012345678901234567890.0000000000000000001",
            "99999999999999999999999999999999999999999999999999.5e-10",
        ];
        for s in cases {
            same_as_std(s);
        }
        // The largest subnormal's halfway point, written out in full: the
        // slow path's worst case (767 significant digits).
        let long = format!("{}e-1100", "7".repeat(790));
        same_as_std(&long);
        same_as_std(&format!("0.{}1", "0".repeat(900)));
    }

    /// How many random inputs: 20,000 in CI, a million under `./dev fuzz`.
    fn cases() -> u64 {
        std::env::var("DECIMAL_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000)
    }

    /// Mantissas of 1 to 800 digits with the point anywhere and exponents
    /// across f64's range (#25: the old test stopped at 25 digits, just short
    /// of the quotient overflow).
    #[test]
    fn random_decimals_read_as_std_reads_them() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64; // xorshift64, fixed seed
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..cases() {
            let len = 1 + next() % [25, 60, 800][(next() % 3) as usize];
            let digits: String = (0..len)
                .map(|_| (b'0' + (next() % 10) as u8) as char)
                .collect();
            let dot = (next() % (len + 1)) as usize;
            let exp = (next() % 700) as i64 - 350;
            let s = format!("{}.{}e{exp}", &digits[..dot], &digits[dot..]);
            same_as_std(&s);
            same_as_std(&format!("{}.{}", &digits[..dot], &digits[dot..]));
            same_as_std(&digits);
        }
    }

    /// Exactly halfway between two neighbouring doubles (the ties), over the
    /// whole finite range, and each double's own shortest and long forms.
    #[test]
    fn ties_read_as_std_reads_them() {
        let mut state = 0xD1B5_4A32_D192_ED03u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..cases() / 10 {
            let x = f64::from_bits(next() % 0x7FE0_0000_0000_0000);
            let mid = midpoint(x);
            // A tie goes to the even neighbour: proof that `mid` is one.
            let even = if x.to_bits().is_multiple_of(2) {
                x
            } else {
                f64::from_bits(x.to_bits() + 1)
            };
            assert_eq!(mid.parse::<f64>(), Ok(even), "{x:e}");
            same_as_std(&mid);
            same_as_std(&format!("{x:e}"));
            same_as_std(&format!("{x:.40e}"));
            same_as_std(&format!("{x:.3}"));
        }
        for bits in [1u64, 2, 3, 0x000F_FFFF_FFFF_FFFF, 0x0010_0000_0000_0000] {
            same_as_std(&midpoint(f64::from_bits(bits)));
        }
    }

    /// The exact decimal halfway between `x` and the next double up: Rust
    /// prints doubles exactly when asked for enough places, and the two
    /// expansions are added and halved as digit strings.
    fn midpoint(x: f64) -> String {
        let up = f64::from_bits(x.to_bits() + 1);
        let [a, b] = [x, up].map(|v| format!("{v:.1100}").replace('.', ""));
        let width = a.len().max(b.len());
        let pad = |t: &str| format!("{t:0>width$}0").into_bytes();
        let (a, b) = (pad(&a), pad(&b));
        let mut sum = vec![0u8; width + 2];
        let mut carry = 0;
        for i in (0..=width).rev() {
            let d = a[i] - b'0' + b[i] - b'0' + carry;
            sum[i + 1] = d % 10;
            carry = d / 10;
        }
        sum[0] = carry;
        let mut half = String::new();
        let mut rem = 0;
        for d in sum {
            let v = rem * 10 + d;
            half.push((b'0' + v / 2) as char);
            rem = v % 2;
        }
        format!("{half}e-1101")
    }
}
