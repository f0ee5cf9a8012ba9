//! Relabeling as Prometheus 2.x does it (`relabel_configs` on targets,
//! `metric_relabel_configs` on scraped samples): the same actions, defaults and checks.
//!
//! Each step reads the label set as it was before the step and writes the result; the
//! source labels' values are joined with the separator (a missing label is `""`); regexes
//! are anchored at both ends; `$1`, `${1}`, `$name` in the replacement expand as Go's
//! `Regexp.Expand` does (a group that does not exist is `""`, `$$` is `$`).

use crate::labels::{is_valid_name, Labels};
use md5::{Digest, Md5};
use regex::Regex;
use serde::Deserialize;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RelabelError {
    #[error("unknown relabel action {0:?}")]
    UnknownAction(String),
    #[error("invalid regex {regex:?}: {message}")]
    Regex { regex: String, message: String },
    #[error("{0}")]
    Invalid(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Replace,
    Keep,
    Drop,
    KeepEqual,
    DropEqual,
    HashMod,
    LabelMap,
    LabelDrop,
    LabelKeep,
    Lowercase,
    Uppercase,
}

impl Action {
    fn parse(text: &str) -> Result<Self, RelabelError> {
        Ok(match text.to_ascii_lowercase().as_str() {
            "replace" => Action::Replace,
            "keep" => Action::Keep,
            "drop" => Action::Drop,
            "keepequal" => Action::KeepEqual,
            "dropequal" => Action::DropEqual,
            "hashmod" => Action::HashMod,
            "labelmap" => Action::LabelMap,
            "labeldrop" => Action::LabelDrop,
            "labelkeep" => Action::LabelKeep,
            "lowercase" => Action::Lowercase,
            "uppercase" => Action::Uppercase,
            _ => return Err(RelabelError::UnknownAction(text.to_string())),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Action::Replace => "replace",
            Action::Keep => "keep",
            Action::Drop => "drop",
            Action::KeepEqual => "keepequal",
            Action::DropEqual => "dropequal",
            Action::HashMod => "hashmod",
            Action::LabelMap => "labelmap",
            Action::LabelDrop => "labeldrop",
            Action::LabelKeep => "labelkeep",
            Action::Lowercase => "lowercase",
            Action::Uppercase => "uppercase",
        }
    }
}

const DEFAULT_SEPARATOR: &str = ";";
const DEFAULT_REGEX: &str = "(.*)";
const DEFAULT_REPLACEMENT: &str = "$1";

/// One relabel step as written in the file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RawRelabel {
    pub source_labels: Option<Vec<String>>,
    pub separator: Option<String>,
    pub regex: Option<String>,
    pub modulus: Option<u64>,
    pub target_label: Option<String>,
    pub replacement: Option<String>,
    pub action: Option<String>,
}

/// One relabel step, checked as Prometheus checks it when it loads its configuration.
#[derive(Clone, Debug)]
pub struct RelabelConfig {
    source_labels: Vec<String>,
    separator: String,
    /// The file's text, unanchored (for messages and equality).
    regex_text: String,
    /// `^(?:text)$`.
    regex: Regex,
    modulus: u64,
    target_label: String,
    replacement: String,
    action: Action,
}

impl PartialEq for RelabelConfig {
    fn eq(&self, other: &Self) -> bool {
        self.source_labels == other.source_labels
            && self.separator == other.separator
            && self.regex_text == other.regex_text
            && self.modulus == other.modulus
            && self.target_label == other.target_label
            && self.replacement == other.replacement
            && self.action == other.action
    }
}

/// A `target_label` (or `labelmap` replacement) that may hold `$1`/`${name}` references.
fn is_valid_template(text: &str) -> bool {
    static TEMPLATE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            Regex::new(r"^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$").expect("a valid regex")
        })
        .is_match(text)
}

impl RelabelConfig {
    pub fn new(raw: RawRelabel) -> Result<Self, RelabelError> {
        let action = Action::parse(raw.action.as_deref().unwrap_or("replace"))?;
        let regex_text = raw
            .regex
            .clone()
            .unwrap_or_else(|| DEFAULT_REGEX.to_string());
        let regex =
            Regex::new(&format!("^(?:{regex_text})$")).map_err(|e| RelabelError::Regex {
                regex: regex_text.clone(),
                message: e.to_string(),
            })?;
        let config = RelabelConfig {
            source_labels: raw.source_labels.clone().unwrap_or_default(),
            separator: raw
                .separator
                .clone()
                .unwrap_or_else(|| DEFAULT_SEPARATOR.to_string()),
            regex_text,
            regex,
            modulus: raw.modulus.unwrap_or(0),
            target_label: raw.target_label.clone().unwrap_or_default(),
            replacement: raw
                .replacement
                .clone()
                .unwrap_or_else(|| DEFAULT_REPLACEMENT.to_string()),
            action,
        };
        config.check(&raw)?;
        Ok(config)
    }

    /// Prometheus' checks, with its words.
    fn check(&self, raw: &RawRelabel) -> Result<(), RelabelError> {
        use Action::*;
        let invalid = |m: String| Err(RelabelError::Invalid(m));
        let name = self.action.name();
        for label in &self.source_labels {
            if !is_valid_name(label) {
                return invalid(format!(
                    "{label:?} is not a valid label name in source_labels"
                ));
            }
        }
        if self.action == HashMod && self.modulus == 0 {
            return invalid("relabel configuration for hashmod requires non-zero modulus".into());
        }
        let needs_target = matches!(
            self.action,
            Replace | HashMod | Lowercase | Uppercase | KeepEqual | DropEqual
        );
        if needs_target && self.target_label.is_empty() {
            return invalid(format!(
                "relabel configuration for {name} action requires 'target_label' value"
            ));
        }
        if matches!(
            self.action,
            Replace | Lowercase | Uppercase | KeepEqual | DropEqual
        ) && !is_valid_template(&self.target_label)
        {
            return invalid(format!(
                "{:?} is invalid 'target_label' for {name} action",
                self.target_label
            ));
        }
        if matches!(self.action, Lowercase | Uppercase | KeepEqual | DropEqual)
            && self.replacement != DEFAULT_REPLACEMENT
        {
            return invalid(format!("'replacement' can not be set for {name} action"));
        }
        if self.action == LabelMap && !is_valid_template(&self.replacement) {
            return invalid(format!(
                "{:?} is invalid 'replacement' for {name} action",
                self.replacement
            ));
        }
        if self.action == HashMod && !is_valid_name(&self.target_label) {
            return invalid(format!(
                "{:?} is invalid 'target_label' for {name} action",
                self.target_label
            ));
        }
        if matches!(self.action, KeepEqual | DropEqual)
            && (self.regex_text != DEFAULT_REGEX
                || self.modulus != 0
                || self.separator != DEFAULT_SEPARATOR
                || self.replacement != DEFAULT_REPLACEMENT)
        {
            return invalid(format!(
                "{name} action requires only 'source_labels' and `target_label`, and no other fields"
            ));
        }
        if matches!(self.action, LabelDrop | LabelKeep)
            && (raw.source_labels.is_some()
                || !self.target_label.is_empty()
                || self.modulus != 0
                || self.separator != DEFAULT_SEPARATOR
                || self.replacement != DEFAULT_REPLACEMENT)
        {
            return invalid(format!(
                "{name} action requires only 'regex', and no other fields"
            ));
        }
        Ok(())
    }

    /// Applies this one step to `labels`; `false` when the step drops the label set.
    pub fn apply(&self, labels: &mut Labels) -> bool {
        let value = self.joined(labels);
        match self.action {
            Action::Drop => return !self.regex.is_match(&value),
            Action::Keep => return self.regex.is_match(&value),
            Action::DropEqual => return labels.get(&self.target_label) != value,
            Action::KeepEqual => return labels.get(&self.target_label) == value,
            Action::Replace => {
                let Some(captures) = self.regex.captures(&value) else {
                    return true;
                };
                let mut target = String::new();
                captures.expand(&self.target_label, &mut target);
                if !is_valid_name(&target) {
                    labels.remove(&self.target_label);
                    return true;
                }
                let mut result = String::new();
                captures.expand(&self.replacement, &mut result);
                if result.is_empty() {
                    labels.remove(&self.target_label);
                } else {
                    labels.set(&target, &result);
                }
            }
            Action::Lowercase => labels.set(&self.target_label, &value.to_lowercase()),
            Action::Uppercase => labels.set(&self.target_label, &value.to_uppercase()),
            Action::HashMod => {
                let hash = hash_mod_sum(&value) % self.modulus;
                labels.set(&self.target_label, &hash.to_string());
            }
            Action::LabelMap => {
                let mapped: Vec<(String, String)> = labels
                    .iter()
                    .filter(|(name, _)| self.regex.is_match(name))
                    .map(|(name, v)| {
                        let new = self.regex.replace_all(name, self.replacement.as_str());
                        (new.into_owned(), v.to_owned())
                    })
                    .collect();
                for (name, v) in mapped {
                    labels.set(&name, &v);
                }
            }
            Action::LabelDrop => labels.retain(|name, _| !self.regex.is_match(name)),
            Action::LabelKeep => labels.retain(|name, _| self.regex.is_match(name)),
        }
        true
    }

    fn joined(&self, labels: &Labels) -> String {
        let mut value = String::new();
        for (i, name) in self.source_labels.iter().enumerate() {
            if i > 0 {
                value.push_str(&self.separator);
            }
            value.push_str(labels.get(name));
        }
        value
    }
}

/// The low 8 bytes of the MD5 of `value`, big-endian: what Prometheus' `hashmod` takes
/// the modulus of.
fn hash_mod_sum(value: &str) -> u64 {
    let digest = Md5::digest(value.as_bytes());
    let mut low = [0u8; 8];
    low.copy_from_slice(&digest[8..16]);
    u64::from_be_bytes(low)
}

/// Applies `configs` in order; `false` as soon as one drops the label set (what is left
/// of `labels` is then meaningless).
pub fn process(labels: &mut Labels, configs: &[RelabelConfig]) -> bool {
    configs.iter().all(|config| config.apply(labels))
}

#[cfg(test)]
mod tests;
