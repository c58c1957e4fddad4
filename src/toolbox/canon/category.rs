//! What a canonical item is ([`Category`]): a type, a function, a variable or a section, so
//! callers of `diff` can pick which ones to compare.

use std::fmt;

use crate::btf::kinds::Kind;

/// What a top-level item is, so callers can pick which ones to compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Named INT, FLOAT, STRUCT, UNION, ENUM, ENUM64, FWD, TYPEDEF, and anonymous enums.
    Type,
    /// FUNC.
    Func,
    /// VAR.
    Var,
    /// DATASEC.
    Datasec,
}

impl Category {
    /// Every category, in display order.
    pub const ALL: [Category; 4] = [
        Category::Type,
        Category::Func,
        Category::Var,
        Category::Datasec,
    ];

    /// The category of a top-level item of kind `kind`.
    pub fn of_kind(kind: Kind) -> Category {
        match kind {
            Kind::Func => Category::Func,
            Kind::Var => Category::Var,
            Kind::Datasec => Category::Datasec,
            _ => Category::Type,
        }
    }

    /// The plural name used in reports: `types`, `funcs`, `vars`, `datasecs`.
    pub fn name(self) -> &'static str {
        match self {
            Category::Type => "types",
            Category::Func => "funcs",
            Category::Var => "vars",
            Category::Datasec => "datasecs",
        }
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Category {
    type Err = String;

    /// Accepts singular or plural names: `type`, `funcs`, ...
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        let norm = norm.strip_suffix('s').unwrap_or(&norm);
        match norm {
            "type" => Ok(Category::Type),
            "func" => Ok(Category::Func),
            "var" => Ok(Category::Var),
            "datasec" => Ok(Category::Datasec),
            _ => Err(format!(
                "unknown category '{s}' (expected types, funcs, vars or datasecs)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn category_parses() {
        assert_eq!("funcs".parse::<Category>().unwrap(), Category::Func);
        assert_eq!("Types".parse::<Category>().unwrap(), Category::Type);
        assert!("struct".parse::<Category>().is_err());
    }
}
