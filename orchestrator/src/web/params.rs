//! A page's query parameters, checked: an unknown name, a repeated one or a value of the
//! wrong shape is a 400 that says which and why.

use crate::view::ViewError;

pub struct Params(Vec<(String, String)>);

type Result<T> = std::result::Result<T, ViewError>;

impl Params {
    /// The pairs of a query, with the names this page knows.
    pub fn new(pairs: Vec<(String, String)>, known: &[&str]) -> Result<Params> {
        for (i, (k, _)) in pairs.iter().enumerate() {
            if !known.contains(&k.as_str()) {
                return Err(ViewError::Invalid(format!(
                    "unknown query parameter {k:?} (this page takes: {})",
                    known.join(", ")
                )));
            }
            if pairs[..i].iter().any(|(p, _)| p == k) {
                return Err(ViewError::Invalid(format!("query parameter {k:?} is given twice")));
            }
        }
        Ok(Params(pairs))
    }

    /// A parameter's value; an empty value counts as not given (an unselected filter).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }

    pub fn int(&self, name: &str) -> Result<Option<i64>> {
        self.get(name)
            .map(|v| {
                v.parse()
                    .map_err(|_| ViewError::Invalid(format!("{name} must be a whole number, not {v:?}")))
            })
            .transpose()
    }

    pub fn float(&self, name: &str) -> Result<Option<f64>> {
        self.get(name)
            .map(|v| match v.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(x),
                _ => Err(ViewError::Invalid(format!("{name} must be a number, not {v:?}"))),
            })
            .transpose()
    }

    /// A value that must be one of `allowed`.
    pub fn one_of(&self, name: &str, allowed: &[&str]) -> Result<Option<String>> {
        match self.get(name) {
            Some(v) if !allowed.contains(&v) => Err(ViewError::Invalid(format!(
                "{name} must be one of {}, not {v:?}",
                allowed.join(", ")
            ))),
            v => Ok(v.map(String::from)),
        }
    }

    /// The query string of these parameters with some set to new values, for links that
    /// change part of a view and keep the rest.
    /// An empty value removes the parameter.
    pub fn with_all(&self, set: &[(&str, &str)]) -> String {
        let mut pairs: Vec<(&str, &str)> = self
            .0
            .iter()
            .filter(|(k, v)| !set.iter().any(|(n, _)| n == k) && !v.is_empty())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        pairs.extend(set.iter().filter(|(_, v)| !v.is_empty()).copied());
        query_string(&pairs)
    }
}

/// "?a=1&b=x%20y", or "" with no pairs.
pub fn query_string(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = pairs.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect();
    format!("?{}", parts.join("&"))
}

/// Percent-encodes all but unreserved characters.
pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)], known: &[&str]) -> Result<Params> {
        Params::new(
            pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
            known,
        )
    }

    #[test]
    fn unknown_repeated_and_malformed_parameters_say_why() {
        let e = p(&[("colour", "red")], &["metric"]).err().unwrap().to_string();
        assert!(e.contains("unknown query parameter \"colour\""), "{e}");
        let e = p(&[("metric", "a"), ("metric", "b")], &["metric"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("given twice"), "{e}");
        let q = p(&[("alpha", "x"), ("n", "1.5"), ("v", "maybe")], &["alpha", "n", "v"]).unwrap();
        assert!(q.float("alpha").unwrap_err().to_string().contains("must be a number"));
        assert!(q.int("n").unwrap_err().to_string().contains("whole number"));
        assert!(q
            .one_of("v", &["yes", "no"])
            .unwrap_err()
            .to_string()
            .contains("one of yes, no"));
        assert_eq!(p(&[("alpha", "")], &["alpha"]).unwrap().float("alpha").unwrap(), None);
    }

    #[test]
    fn links_keep_the_other_parameters_encoded() {
        let q = p(
            &[("metric", "lat p99"), ("verdict", "regression")],
            &["metric", "verdict"],
        )
        .unwrap();
        assert_eq!(q.with_all(&[("verdict", "")]), "?metric=lat%20p99");
        assert_eq!(q.with_all(&[("metric", "a&b")]), "?verdict=regression&metric=a%26b");
    }
}
