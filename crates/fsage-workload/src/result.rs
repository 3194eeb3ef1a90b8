//! What a benchmark run gives back: the types live in fsage-results (so the report reads them
//! without building the engine); re-exported here for the engine and its callers.

pub use fsage_results::bench::*;
