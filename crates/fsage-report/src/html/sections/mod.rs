//! One module per section of the page, each rendering its part of a [`crate::ReportSet`] into
//! the [`super::page::Page`]; the order of the sections on the page is [`super::Section`]'s.

pub(super) mod against;
pub(super) mod aged_vs_fresh;
pub(super) mod aging;
pub(super) mod bench;
pub(super) mod cells;
pub(super) mod frag;
pub(super) mod git;
pub(super) mod inversions;
pub(super) mod latency;
pub(super) mod published;
pub(super) mod sweep;
pub(super) mod timeline;
