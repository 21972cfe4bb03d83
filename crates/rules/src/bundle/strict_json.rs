//! JSON parsing that refuses what `serde_json::Value` silently accepts:
//! duplicate object keys (the last would win, so two readers could see two
//! different manifests). NaN and Infinity are not JSON and serde_json already
//! refuses them; we only make that error say so.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct JsonError {
    /// JSON pointer of the offending object, when known.
    pub pointer: Option<String>,
    pub message: String,
}

pub fn parse(bytes: &[u8]) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = ValueSeed {
        pointer: String::new(),
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|_| v));
    value.map_err(|e| describe(bytes, e))
}

fn describe(bytes: &[u8], e: serde_json::Error) -> JsonError {
    let msg = e.to_string();
    if let Some(rest) = msg.strip_prefix(DUP_PREFIX) {
        // Our own message: "<pointer>\u{0}<key> at line L column C".
        let (pointer, tail) = rest.split_once('\u{0}').unwrap_or(("", rest));
        return JsonError {
            pointer: Some(pointer.to_string()),
            message: format!("duplicate key {tail}"),
        };
    }
    // serde_json stops just past the token it choked on: look a few bytes
    // back on that line for a NaN or Infinity literal to name it.
    let line = bytes
        .split(|&b| b == b'\n')
        .nth(e.line().saturating_sub(1))
        .unwrap_or(&[]);
    let col = e.column().min(line.len());
    let window = String::from_utf8_lossy(&line[col.saturating_sub(12)..(col + 9).min(line.len())]);
    let nonfinite = ["NaN", "Infinity", "nan", "inf"]
        .iter()
        .any(|t| window.contains(t));
    let message = if nonfinite {
        format!("NaN and Infinity are not valid JSON numbers ({msg})")
    } else {
        msg
    };
    JsonError {
        pointer: None,
        message,
    }
}

const DUP_PREFIX: &str = "wattcounts-duplicate-key:";

pub fn escape_pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

struct ValueSeed {
    pointer: String,
}

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor {
            pointer: self.pointer,
        })
    }
}

struct ValueVisitor {
    pointer: String,
}

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("NaN and Infinity are not valid JSON numbers"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    // serde_json hands a slice's strings to visit_str and `null` to
    // visit_unit; serde's defaults forward visit_string to visit_str, and it
    // never calls visit_none.
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(ValueSeed {
            pointer: format!("{}/{}", self.pointer, out.len()),
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let pointer = format!("{}/{}", self.pointer, escape_pointer_token(&key));
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "{DUP_PREFIX}{}\u{0}\"{key}\"",
                    self.pointer
                )));
            }
            let v = map.next_value_seed(ValueSeed { pointer })?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_json() {
        let v = parse(br#"{"a": [1, 2.5, {"b": null}], "c": "x"}"#).unwrap();
        assert_eq!(v["a"][1], 2.5);
    }

    #[test]
    fn names_duplicate_keys_with_pointer() {
        let e = parse(br#"{"system": {"gpu": {"name": "a", "name": "b"}}}"#).unwrap_err();
        assert_eq!(e.pointer.as_deref(), Some("/system/gpu"));
        assert!(e.message.contains("\"name\""), "{}", e.message);
        let e = parse(br#"{"x": 1, "x": 2}"#).unwrap_err();
        assert_eq!(e.pointer.as_deref(), Some(""));
    }

    #[test]
    fn names_nan_and_infinity() {
        for text in [
            &br#"{"a": NaN}"#[..],
            br#"{"a": Infinity}"#,
            br#"{"a": -Infinity}"#,
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.message.contains("NaN and Infinity"), "{}", e.message);
        }
        let e = parse(br#"{"a": tru}"#).unwrap_err();
        assert!(!e.message.contains("NaN"), "{}", e.message);
    }

    #[test]
    fn reads_every_kind_of_value_as_serde_json_does() {
        let text =
            br#"[true, false, -3, 18446744073709551615, 0.5, "s", null, {"k/~": [], "e": {}}]"#;
        let want: Value = serde_json::from_slice(text).unwrap();
        assert_eq!(parse(text).unwrap(), want);
    }

    #[test]
    fn a_duplicate_s_pointer_escapes_and_counts() {
        // RFC 6901: '/' in a key is ~1, '~' is ~0; array items by index.
        let e = parse(br#"{"a/b": [{}, {"x~y": {"k": 1, "k": 2}}]}"#).unwrap_err();
        assert_eq!(e.pointer.as_deref(), Some("/a~1b/1/x~0y"));
        assert!(
            e.message.starts_with("duplicate key \"k\" at line 1"),
            "{}",
            e.message
        );
        assert_eq!(escape_pointer_token("~/"), "~0~1");
    }

    #[test]
    fn nan_is_named_on_its_own_line_and_only_near_the_error() {
        let e = parse(b"{\n  \"a\": 1,\n  \"b\": NaN\n}").unwrap_err();
        assert!(e.message.contains("NaN and Infinity"), "{}", e.message);
        let padded = format!("{{\"pad\": \"{}\", \"a\": NaN}}", "x".repeat(200));
        let e = parse(padded.as_bytes()).unwrap_err();
        assert!(e.message.contains("NaN and Infinity"), "{}", e.message);
        // "NaN" as text well before or after another error is not it.
        for text in [
            &br#"{"note": "NaN", "padding": "xxxxxxxxxxxx", "a": tru}"#[..],
            br#"{"a": tru, "nnnnnnnnnnnnnnnnnnnnnnnn": "NaN"}"#,
        ] {
            let e = parse(text).unwrap_err();
            assert!(!e.message.contains("NaN and"), "{}", e.message);
        }
    }

    #[test]
    fn refuses_trailing_garbage() {
        let e = parse(b"{} {}").unwrap_err();
        assert!(e.message.contains("trailing characters"), "{}", e.message);
    }
}
