//! Units people think in, derived from measured energy per request: Wh per
//! 1,000 requests and, with a grid carbon intensity and a PUE, grams of
//! CO₂e per 1,000 requests. A presentation of the pages only: snapshots
//! and the stored figures keep the measured joules.

use serde::Serialize;

use crate::verdict::Estimate;

/// What turns GPU board energy into a footprint. Both are assumptions the
/// pages state beside every figure they produce.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Footprint {
    /// Grams of CO₂-equivalent per kWh drawn from the grid.
    pub grid_g_per_kwh: f64,
    /// Power usage effectiveness: facility energy over IT energy (≥ 1).
    pub pue: f64,
}

/// About the world's average electricity in recent years (Ember's and the
/// IEA's yearly reviews put it near 470–480 g/kWh).
pub const DEFAULT_GRID_G_PER_KWH: f64 = 475.0;
/// A modern, efficient data centre (industry surveys' averages are higher,
/// about 1.5).
pub const DEFAULT_PUE: f64 = 1.2;

impl Default for Footprint {
    fn default() -> Self {
        Footprint {
            grid_g_per_kwh: DEFAULT_GRID_G_PER_KWH,
            pue: DEFAULT_PUE,
        }
    }
}

const J_PER_WH: f64 = 3600.0;

/// Joules per request → Wh per 1,000 requests.
pub fn wh_per_1000(j_per_request: Estimate) -> Estimate {
    j_per_request.scaled(1000.0 / J_PER_WH)
}

impl Footprint {
    /// Joules per request (GPU board) → g CO₂e per 1,000 requests at the
    /// facility: kWh × PUE × grid intensity.
    pub fn g_co2e_per_1000(&self, j_per_request: Estimate) -> Estimate {
        wh_per_1000(j_per_request).scaled(self.pue * self.grid_g_per_kwh / 1000.0)
    }

    pub fn describe(&self) -> String {
        format!("grid {} gCO₂e/kWh, PUE {}", self.grid_g_per_kwh, self.pue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        // 36 J per request = 10 Wh per 1,000 requests.
        let e = Estimate::new(36.0, None);
        assert!((wh_per_1000(e).median - 10.0).abs() < 1e-12);
        // 10 Wh = 0.01 kWh; × 1.5 × 400 g/kWh = 6 g.
        let f = Footprint {
            grid_g_per_kwh: 400.0,
            pue: 1.5,
        };
        assert!((f.g_co2e_per_1000(e).median - 6.0).abs() < 1e-12);
    }

    #[test]
    fn the_footprint_says_what_it_assumes() {
        assert_eq!(
            Footprint::default().describe(),
            "grid 475 gCO₂e/kWh, PUE 1.2"
        );
    }
}
