//! Running it: both backends behind one behaviour suite, several instances,
//! outages, a full disk, crashes at named points, slow clients, upgrades,
//! backup and restore, the response cache, hardening, metrics and settings.

mod backends;
mod backup;
mod cache;
mod crash_points;
mod disk_full;
mod hardening;
mod instances;
mod metrics_and_config;
mod outage;
mod slow_clients;
mod upgrades;
