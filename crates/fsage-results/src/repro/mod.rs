//! The papers' published figures and fsage's reproductions of them, as data: the published
//! numbers ([`published`], `docs/reproductions/published.csv` compiled in), one definition per
//! figure ([`catalog`]), what a reproduction's directory records ([`record`]), and fsage's number
//! beside each published one ([`compare`], a pure function of the results). Running a
//! reproduction is fsage-repro's, which re-exports these where they were.

pub mod catalog;
pub mod compare;
pub mod published;
pub mod record;
