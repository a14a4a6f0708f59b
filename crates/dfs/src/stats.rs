//! Small integer statistics shared by the engines (median, mean).

/// The median of `v` (mean of the two middle values for an even count, rounded toward
/// negative infinity); `None` when empty. Sorts `v` in place.
pub(crate) fn median_i64(v: &mut [i64]) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        Some(v[n / 2])
    } else {
        let (a, b) = (v[n / 2 - 1] as i128, v[n / 2] as i128);
        Some((a + b).div_euclid(2) as i64)
    }
}

/// The median of `v` for floats (mean of the two middle values for an even count).
pub(crate) fn median_f64(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The arithmetic mean, rounded toward negative infinity; `None` when empty.
pub(crate) fn mean_i64(v: &[i64]) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    let s: i128 = v.iter().map(|&x| x as i128).sum();
    Some(s.div_euclid(v.len() as i128) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_and_empty() {
        assert_eq!(median_i64(&mut [5, 1, 3]), Some(3));
        assert_eq!(median_i64(&mut [4, 1, 3, 10]), Some(3)); // (3+4)/2 = 3.5 -> 3
        assert_eq!(median_i64(&mut [-3, -4]), Some(-4)); // -3.5 -> -4
        assert_eq!(median_i64(&mut []), None);
        assert_eq!(median_f64(&mut [1.0, 4.0]), Some(2.5));
        assert_eq!(mean_i64(&[1, 2, 4]), Some(2));
        assert_eq!(mean_i64(&[-1, -2]), Some(-2));
    }
}
