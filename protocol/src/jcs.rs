//! RFC 8785 JSON Canonicalization Scheme (JCS), the form a signed agent card is hashed in
//! (spec §8.4).
//!
//! * object members sorted by their names as UTF-16 code units;
//! * no whitespace;
//! * strings as ECMAScript `JSON.stringify` writes them: only `"`, `\` and the control
//!   characters are escaped (`\b \f \n \r \t`, otherwise `\u00xx` in lowercase hex), every
//!   other character is literal UTF-8;
//! * numbers as ECMAScript `Number.prototype.toString` writes the IEEE 754 double: integers
//!   without `.0`, `1e+21` style exponents, `-0` as `0`; NaN and infinities are refused.
//!   An integer beyond 2^53 is first rounded to the nearest double, as a JavaScript parser
//!   would.
//!
//! Nesting is limited to [`MAX_DEPTH`] arrays and objects.

use serde_json::{Map, Number, Value};
use std::fmt::Write as _;

/// The deepest nesting of arrays and objects [`canonicalize`] accepts. The outermost array
/// or object is at depth 1; scalars add nothing.
pub const MAX_DEPTH: usize = 128;

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JcsError {
    /// NaN or an infinity: not a JSON number.
    #[error("JCS: a number is not finite (NaN or infinity)")]
    NonFiniteNumber,
    /// More than [`MAX_DEPTH`] nested arrays and objects.
    #[error("JCS: arrays and objects nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// The RFC 8785 canonical form of `value`.
pub fn canonicalize(value: &Value) -> Result<String, JcsError> {
    let mut out = String::new();
    write_value(&mut out, value, 0)?;
    Ok(out)
}

fn write_value(out: &mut String, value: &Value, depth: usize) -> Result<(), JcsError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n)?,
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            let depth = enter(depth)?;
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, depth)?;
            }
            out.push(']');
        }
        Value::Object(members) => {
            let depth = enter(depth)?;
            write_object(out, members, depth)?;
        }
    }
    Ok(())
}

fn enter(depth: usize) -> Result<usize, JcsError> {
    if depth >= MAX_DEPTH {
        Err(JcsError::TooDeep)
    } else {
        Ok(depth + 1)
    }
}

fn write_object(out: &mut String, members: &Map<String, Value>, depth: usize) -> Result<(), JcsError> {
    // Sort by UTF-16 code units (RFC 8785 §3.2.3), which differs from UTF-8 / code point
    // order for characters above U+FFFF against U+E000..U+FFFF.
    let mut sorted: Vec<(Vec<u16>, &String, &Value)> =
        members.iter().map(|(k, v)| (k.encode_utf16().collect(), k, v)).collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    out.push('{');
    for (i, (_, key, value)) in sorted.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_value(out, value, depth)?;
    }
    out.push('}');
    Ok(())
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_number(out: &mut String, n: &Number) -> Result<(), JcsError> {
    // Without `arbitrary_precision`, every serde_json number has an f64 view; i64 and u64
    // convert with round-to-nearest-even, as a JavaScript parser would.
    let x = n.as_f64().ok_or(JcsError::NonFiniteNumber)?;
    write_f64(out, x)
}

/// ECMAScript `Number::toString(x)` (ECMA-262 §6.1.6.1.20) for a finite double.
fn write_f64(out: &mut String, x: f64) -> Result<(), JcsError> {
    if !x.is_finite() {
        return Err(JcsError::NonFiniteNumber);
    }
    if x == 0.0 {
        out.push('0'); // both +0 and -0
        return Ok(());
    }
    if x < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` writes the shortest digits that round-trip (the same digits ECMAScript
    // picks), as `d[.ddd]e<exp>`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes a decimal exponent");
    let mut digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if let Some(even) = even_tie(x.abs(), &digits, exponent) {
        digits = even;
    }
    let k = digits.len() as i32;
    let n = exponent + 1; // the decimal point sits after `n` digits
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.push_str(&"0".repeat((n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = n - 1;
        let _ = write!(out, "e{}{}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    Ok(())
}

/// ECMAScript breaks a tie between two equally close shortest digit strings towards the
/// even one (1424953923781206.25 is written `…206.2`); Rust's shortest formatting rounds
/// such a tie up. `digits` (k digits, first at 10^`exponent`) are Rust's shortest digits of
/// `x > 0`; this returns the even neighbour when `x` lies exactly halfway between it and
/// `digits` and it also reads back as `x`.
fn even_tie(x: f64, digits: &str, exponent: i32) -> Option<String> {
    // The exact decimal value of `x` (a double has at most 767 significant digits).
    let exact = format!("{x:.800e}");
    let (mantissa, exact_exponent) = exact.split_once('e')?;
    let exact_digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exact_digits = exact_digits.trim_end_matches('0');
    let k = digits.len();
    if exact_exponent.parse::<i32>().ok()? != exponent || exact_digits.len() != k + 1 || !exact_digits.ends_with('5') {
        return None;
    }
    let low = &exact_digits[..k];
    let high = increment(low)?; // None on a carry into a new digit: no such tie
    let even = if matches!(low.as_bytes()[k - 1], b'0' | b'2' | b'4' | b'6' | b'8') { low.to_owned() } else { high };
    if even == digits {
        return None;
    }
    let candidate = format!("{}.{}e{exponent}", &even[..1], &even[1..]);
    (candidate.parse::<f64>().ok()? == x).then_some(even)
}

/// `digits + 1` as a decimal string of the same length, or None if it would grow.
fn increment(digits: &str) -> Option<String> {
    let mut bytes = digits.as_bytes().to_vec();
    for b in bytes.iter_mut().rev() {
        if *b == b'9' {
            *b = b'0';
        } else {
            *b += 1;
            return String::from_utf8(bytes).ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn num(x: f64) -> String {
        let mut out = String::new();
        write_f64(&mut out, x).unwrap();
        out
    }

    #[test]
    fn jcs_rfc8785_section_3_2_2_example() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        let value: Value = serde_json::from_str(input).unwrap();
        assert_eq!(
            canonicalize(&value).unwrap(),
            "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\
             \"string\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}"
        );
    }

    #[test]
    fn jcs_rfc8785_key_sorting_by_utf16() {
        let input = r#"{
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "1": "One",
          "\ud83d\ude00": "Emoji: Grinning Face",
          "\u0080": "Control",
          "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let value: Value = serde_json::from_str(input).unwrap();
        let expected = concat!(
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",",
            "\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",",
            "\"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
        );
        assert_eq!(canonicalize(&value).unwrap(), expected);
    }

    #[test]
    fn jcs_rfc8785_number_examples() {
        for (input, expected) in [
            ("333333333.33333329", "333333333.3333333"),
            ("1E30", "1e+30"),
            ("4.50", "4.5"),
            ("2e-3", "0.002"),
            ("0.000000000000000000000000001", "1e-27"),
            ("1e-7", "1e-7"),
            ("0.000001", "0.000001"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("100", "100"),
            ("1.0", "1"),
            ("-12.5", "-12.5"),
            ("18446744073709551615", "18446744073709552000"),
        ] {
            let value: Value = serde_json::from_str(input).unwrap();
            assert_eq!(canonicalize(&value).unwrap(), expected, "input {input}");
        }
    }

    #[test]
    fn jcs_rfc8785_appendix_b_doubles() {
        for (bits, expected) in [
            (0x0000000000000000u64, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ] {
            assert_eq!(num(f64::from_bits(bits)), expected, "bits {bits:#018x}");
        }
    }

    #[test]
    fn jcs_rejects_non_finite() {
        let mut out = String::new();
        assert_eq!(write_f64(&mut out, f64::NAN), Err(JcsError::NonFiniteNumber));
        assert_eq!(write_f64(&mut out, f64::INFINITY), Err(JcsError::NonFiniteNumber));
        assert_eq!(write_f64(&mut out, f64::NEG_INFINITY), Err(JcsError::NonFiniteNumber));
    }

    #[test]
    fn jcs_string_escapes() {
        let value = json!("\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f}\u{7f} \"\\/<>&\u{2028}é😀");
        assert_eq!(
            canonicalize(&value).unwrap(),
            "\"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\u{7f} \\\"\\\\/<>&\u{2028}é😀\""
        );
    }

    #[test]
    fn jcs_nested_and_empty() {
        let value = json!({"b": [], "a": {}, "c": [{"z": 1, "y": [2, {"x": null}]}], "": "empty"});
        assert_eq!(canonicalize(&value).unwrap(), r#"{"":"empty","a":{},"b":[],"c":[{"y":[2,{"x":null}],"z":1}]}"#);
    }

    fn nested(depth: usize) -> Value {
        let mut value = json!(1);
        for i in 0..depth {
            value = if i % 2 == 0 { json!([value]) } else { json!({ "k": value }) };
        }
        value
    }

    #[test]
    fn jcs_depth_limit() {
        let ok = canonicalize(&nested(MAX_DEPTH)).unwrap();
        assert!(ok.starts_with("{\"k\":[") && ok.contains('1'));
        assert_eq!(canonicalize(&nested(MAX_DEPTH + 1)), Err(JcsError::TooDeep));
        assert_eq!(canonicalize(&json!({"a": nested(MAX_DEPTH)})), Err(JcsError::TooDeep));
        assert_eq!(canonicalize(&json!(7)).unwrap(), "7");
    }
}
