//! What verify reports ([`Problem`]: a rule and a message, at a type or the header) and the
//! sink that collects problems up to [`MAX_PROBLEMS`].

use std::fmt;

/// At most this many problems are reported; one more entry (rule [`RULE_LIMIT`]) says so.
pub const MAX_PROBLEMS: usize = 100;
/// Rule name of the final entry added when more than [`MAX_PROBLEMS`] problems were found.
pub const RULE_LIMIT: &str = "LIMIT";

/// One reason the kernel would reject the BTF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The type concerned; `None` for header and string-section problems.
    pub type_id: Option<u32>,
    /// Stable rule identifier, e.g. `"H1-magic"`, `"M10-member-offset"`, `"R3-loop"`.
    pub rule: &'static str,
    /// What is wrong, for a human.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.type_id {
            _ if self.rule == RULE_LIMIT => write!(f, "... {}", self.message),
            Some(id) => write!(f, "[{id}] {}: {}", self.rule, self.message),
            None => write!(f, "header {}: {}", self.rule, self.message),
        }
    }
}

/// Collects problems, stopping after [`MAX_PROBLEMS`], and the tags older kernels reject.
#[derive(Default)]
pub(super) struct Sink {
    pub(super) problems: Vec<Problem>,
    pub(super) full: bool,
    /// TYPE_TAGs and DECL_TAGs with kind_flag 1 that the rules took: the first one's id and
    /// description, and how many there are.
    pub(super) attribute_tags: Option<(u32, u32, String)>,
}

impl Sink {
    pub(super) fn push(&mut self, type_id: Option<u32>, rule: &'static str, message: String) {
        if self.full {
            return;
        }
        if self.problems.len() == MAX_PROBLEMS {
            self.full = true;
            self.problems.push(Problem {
                type_id: None,
                rule: RULE_LIMIT,
                message: format!("more problems not shown (stopped after {MAX_PROBLEMS})"),
            });
            return;
        }
        self.problems.push(Problem {
            type_id,
            rule,
            message,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_display() {
        let p = Problem {
            type_id: Some(7),
            rule: "R3-loop",
            message: "x".into(),
        };
        assert_eq!(p.to_string(), "[7] R3-loop: x");
        let h = Problem {
            type_id: None,
            rule: "H1-magic",
            message: "y".into(),
        };
        assert_eq!(h.to_string(), "header H1-magic: y");
    }
}
