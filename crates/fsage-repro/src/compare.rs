//! fsage's number beside each published one: the difference and whether it is within the aim.
//! A pure function of the results, fsage-results' (the report compares without running),
//! re-exported here.

pub use fsage_results::repro::compare::*;
