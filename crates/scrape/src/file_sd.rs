//! The target groups of a `file_sd_configs` file: a list of `{targets, labels}`, in JSON
//! (a name ending in `.json`) or YAML (`.yml`, `.yaml`), as Prometheus reads them.

use crate::config::{check_group, TargetGroup};

/// The label a file's targets get with the file's path, before relabeling.
pub const FILEPATH_LABEL: &str = "__meta_filepath";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("file_sd {path}: {message}")]
pub struct FileSdError {
    pub path: String,
    pub message: String,
}

/// Parses `text`, the content of the file at `path` (its name says JSON or YAML).
pub fn parse(path: &str, text: &str) -> Result<Vec<TargetGroup>, FileSdError> {
    let error = |message: String| FileSdError {
        path: path.to_string(),
        message,
    };
    let groups: Vec<TargetGroup> = if path.ends_with(".json") {
        serde_json::from_str(text).map_err(|e| error(e.to_string()))?
    } else if text.trim().is_empty() {
        Vec::new()
    } else {
        serde_yaml_ng::from_str(text).map_err(|e| error(e.to_string()))?
    };
    for (i, group) in groups.iter().enumerate() {
        check_group(group).map_err(|e| error(format!("group {i}: {e}")))?;
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_yaml_groups() {
        let json =
            r#"[{"targets": ["a:1", "b:2"], "labels": {"env": "prod"}}, {"targets": ["c:3"]}]"#;
        let groups = parse("/x/targets.json", json).unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].targets, ["a:1", "b:2"]);
        assert_eq!(groups[0].labels["env"], "prod");
        let yaml = "- targets: ['a:1']\n  labels:\n    env: dev\n";
        assert_eq!(parse("t.yml", yaml).unwrap()[0].labels["env"], "dev");
        assert_eq!(parse("t.yml", "").unwrap(), vec![]);
    }

    #[test]
    fn refusals_name_the_file_and_the_key() {
        let e = parse("t.json", r#"[{"targets": ["a:1"], "lables": {}}]"#).unwrap_err();
        assert!(e.to_string().contains("t.json"), "{e}");
        assert!(e.to_string().contains("lables"), "{e}");
        let e = parse("t.yml", "- targets: ['a:1']\n  labels: {'bad-name': x}\n").unwrap_err();
        assert!(e.to_string().contains("bad-name"), "{e}");
    }
}
