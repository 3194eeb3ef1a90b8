//! The published numbers (`docs/reproductions/published.csv`, compiled in), fsage-results'
//! (the report reads them without running), re-exported here.

pub use fsage_results::repro::published::*;
