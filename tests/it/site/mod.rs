//! The site as a whole: every page in headless Chromium, the OpenAPI
//! document, and the architecture map kept true.

mod architecture_map;
mod browser;
mod openapi;
