//! The frame every page is drawn in (`templates/base.html`), held once per
//! page: the service's version in the footer and the demo banner.

/// What every page's frame (`templates/base.html`) shows, held once: the
/// service's version in the footer, and whether the page shows the
/// synthetic demo (the banner over it).
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub version: &'static str,
    pub demo: bool,
}

impl Layout {
    /// This build's frame, with the demo banner when `demo`.
    pub fn of(demo: bool) -> Layout {
        Layout {
            version: crate::VERSION,
            demo,
        }
    }
}
