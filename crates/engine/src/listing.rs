//! Names for the dashboard's pickers: measurements, fields, tag keys and tag values
//! starting with what was typed, the first `limit`, and whether there were more.

use crate::{Engine, EngineError};
use tickertape_backend::NameQuery;

/// One page of a listing: `names` sorted, `truncated` when more names matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    pub names: Vec<String>,
    pub truncated: bool,
}

impl Listing {
    /// From the first `limit + 1` names asked of a backend: the extra one only says there
    /// are more.
    fn cut(mut names: Vec<String>, limit: usize) -> Self {
        let truncated = names.len() > limit;
        names.truncate(limit);
        Self { names, truncated }
    }
}

/// The same query, one name more: whether the answer was cut is then known without a count.
fn one_more(query: &NameQuery) -> NameQuery {
    NameQuery::new(query.prefix(), query.limit().saturating_add(1))
}

impl Engine {
    /// The measurements any series of this database has.
    ///
    /// The backend lists stored names, in which the default database's sort before every
    /// other database's (`tickertape_core::database`): a named database asks for its
    /// prefix, the default one drops the marked names from the end of its answer.
    pub async fn list_measurements(&self, query: &NameQuery) -> Result<Listing, EngineError> {
        let namespace = self.namespace();
        let prefix = namespace.stored(query.prefix());
        let stored = NameQuery::new(prefix, query.limit().saturating_add(1));
        let names = self
            .backend
            .list_measurements(&stored)
            .await?
            .iter()
            .filter_map(|m| namespace.user(m).map(str::to_string))
            .collect();
        Ok(Listing::cut(names, query.limit()))
    }

    /// The fields the series of `measurement` have.
    pub async fn list_fields_of(
        &self,
        measurement: &str,
        query: &NameQuery,
    ) -> Result<Listing, EngineError> {
        let names = self
            .backend
            .list_fields_of(&self.stored_measurement(measurement), &one_more(query))
            .await?;
        Ok(Listing::cut(names, query.limit()))
    }

    /// The tag keys the series of `measurement` have.
    pub async fn list_tag_keys(
        &self,
        measurement: &str,
        query: &NameQuery,
    ) -> Result<Listing, EngineError> {
        let names = self
            .backend
            .list_tag_keys(&self.stored_measurement(measurement), &one_more(query))
            .await?;
        Ok(Listing::cut(names, query.limit()))
    }

    /// The values tag `key` takes among the series of `measurement`.
    pub async fn list_tag_values(
        &self,
        measurement: &str,
        key: &str,
        query: &NameQuery,
    ) -> Result<Listing, EngineError> {
        let names = self
            .backend
            .list_tag_values(&self.stored_measurement(measurement), key, &one_more(query))
            .await?;
        Ok(Listing::cut(names, query.limit()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tickertape_core::time::Precision;
    use tickertape_reference::ReferenceBackend;

    #[tokio::test]
    async fn says_when_a_listing_was_cut() {
        let engine = Engine::new(Arc::new(ReferenceBackend::default()));
        let body = "cpu,host=a u=1 1\ncpu,host=b u=1 1\ncpu,host=c s=1 1\nmem,host=a free=1 1\n";
        engine
            .write_lines(body, Precision::Nanoseconds)
            .await
            .expect("write");
        let q = |prefix: &str, limit| NameQuery::new(prefix, limit);
        let listing = |names: &[&str], truncated| Listing {
            names: names.iter().map(|s| s.to_string()).collect(),
            truncated,
        };
        let m = engine.list_measurements(&q("", 1)).await.expect("list");
        assert_eq!(m, listing(&["cpu"], true));
        let m = engine.list_measurements(&q("", 2)).await.expect("list");
        assert_eq!(m, listing(&["cpu", "mem"], false));
        let f = engine.list_fields_of("cpu", &q("", 5)).await.expect("list");
        assert_eq!(f, listing(&["s", "u"], false));
        let v = engine
            .list_tag_values("cpu", "host", &q("", 2))
            .await
            .expect("list");
        assert_eq!(v, listing(&["a", "b"], true));
        let k = engine.list_tag_keys("cpu", &q("h", 5)).await.expect("list");
        assert_eq!(k, listing(&["host"], false));
    }
}
