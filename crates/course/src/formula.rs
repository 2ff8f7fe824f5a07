//! Bytes-moved formulas: sums of products of whole numbers and names, such as `4*n + 4*partials`.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// A formula for the bytes a step moves: terms joined by `+`, each a product (`*`) of whole
/// numbers and names. Names are bound when the formula is evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formula {
    text: String,
    terms: Vec<Vec<Factor>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Factor {
    Number(u64),
    Name(String),
}

impl Formula {
    pub fn parse(text: &str) -> Result<Formula, String> {
        let bad = |why: &str| format!("bytes formula `{text}`: {why}");
        let mut terms = Vec::new();
        for term in text.split('+') {
            let mut factors = Vec::new();
            for factor in term.split('*') {
                let factor = factor.trim();
                if factor.is_empty() {
                    return Err(bad("an empty term or factor"));
                }
                if factor.chars().all(|c| c.is_ascii_digit()) {
                    factors.push(Factor::Number(
                        factor.parse().map_err(|_| bad("a number too large"))?,
                    ));
                } else if factor.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                    factors.push(Factor::Name(factor.to_string()));
                } else {
                    return Err(bad(&format!(
                        "`{factor}` is neither a whole number nor a lower-case name"
                    )));
                }
            }
            terms.push(factors);
        }
        Ok(Formula { text: text.trim().to_string(), terms })
    }

    /// The value, with `value` giving each name's; an error names a name it does not know, or an
    /// overflow.
    pub fn eval(&self, value: impl Fn(&str) -> Option<u64>) -> Result<u64, String> {
        let mut total: u64 = 0;
        for term in &self.terms {
            let mut product: u64 = 1;
            for factor in term {
                let v = match factor {
                    Factor::Number(v) => *v,
                    Factor::Name(name) => value(name)
                        .ok_or_else(|| format!("`{}`: no value for `{name}`", self.text))?,
                };
                product =
                    product.checked_mul(v).ok_or_else(|| format!("`{}` overflows", self.text))?;
            }
            total =
                total.checked_add(product).ok_or_else(|| format!("`{}` overflows", self.text))?;
        }
        Ok(total)
    }

    /// The names the formula uses.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().flatten().filter_map(|f| match f {
            Factor::Name(name) => Some(name.as_str()),
            Factor::Number(_) => None,
        })
    }
}

impl fmt::Display for Formula {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Formula {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Formula::parse(&String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_sums_of_products() {
        let f = Formula::parse("4*n + 4*partials + 8").unwrap();
        let value = |name: &str| match name {
            "n" => Some(10),
            "partials" => Some(3),
            _ => None,
        };
        assert_eq!(f.eval(value), Ok(60));
        assert_eq!(f.names().collect::<Vec<_>>(), ["n", "partials"]);
        assert!(f.eval(|_| None).unwrap_err().contains("no value for `n`"));
        assert!(
            Formula::parse("4*n")
                .unwrap()
                .eval(|_| Some(u64::MAX))
                .unwrap_err()
                .contains("overflows")
        );
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        for bad in ["", "4*", "+n", "4n", "n-1", "N", "(n)"] {
            assert!(Formula::parse(bad).is_err(), "{bad:?} parsed");
        }
    }
}
