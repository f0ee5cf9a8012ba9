//! PromQL, parsed by `promql-parser` and evaluated here.
