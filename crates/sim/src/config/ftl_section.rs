//! `[ftl]`: which scheme an experiment runs, and each scheme's settings.

use ftl::{BlockFtlConfig, DftlConfig, PageFtlConfig, RtBlockConfig, SchemeConfig};
use serde::{Deserialize, Serialize};

/// FTL schemes: the registry `ftl::SchemeKind` (`[ftl] scheme = "page"`, …).
pub use ftl::SchemeKind as FtlScheme;

/// `[ftl]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FtlSection {
    /// Scheme.
    pub scheme: FtlScheme,
    /// `[ftl.page]` settings.
    pub page: PageFtlConfig,
    /// `[ftl.block]` settings.
    pub block: BlockFtlConfig,
    /// `[ftl.gftl]` settings.
    pub gftl: RtBlockConfig,
    /// `[ftl.rftl]` settings.
    pub rftl: RtBlockConfig,
    /// `[ftl.dftl-por]` settings.
    #[serde(rename = "dftl-por")]
    pub dftl_por: DftlConfig,
    /// `[ftl.spftl]` settings.
    pub spftl: DftlConfig,
    /// `[ftl.spftl-log]` settings.
    #[serde(rename = "spftl-log")]
    pub spftl_log: DftlConfig,
    /// `[ftl.combined]` settings: `[ftl.page]`'s keys, each replacing the combined
    /// profile's value of it ([`ftl::combined::profile`]); the rest are the profile's.
    #[serde(deserialize_with = "combined_over_profile")]
    pub combined: PageFtlConfig,
}

impl Default for FtlSection {
    fn default() -> Self {
        FtlSection {
            scheme: FtlScheme::default(),
            page: PageFtlConfig::default(),
            block: BlockFtlConfig::default(),
            gftl: RtBlockConfig::default(),
            rftl: RtBlockConfig::default(),
            dftl_por: DftlConfig::default(),
            spftl: DftlConfig::default(),
            spftl_log: DftlConfig::default(),
            combined: ftl::combined::profile(),
        }
    }
}

/// `[ftl.combined]`: the keys given, over the combined profile's values of the others.
fn combined_over_profile<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<PageFtlConfig, D::Error> {
    use serde::de::Error;
    let given = toml::Table::deserialize(d)?;
    let mut table = toml::Table::try_from(ftl::combined::profile()).map_err(D::Error::custom)?;
    // An over-provisioning given explicitly is taken as given (or refused), not raised.
    if given.contains_key("over_provisioning") {
        table.insert("auto_over_provisioning".into(), false.into());
    }
    table.extend(given);
    toml::Value::Table(table)
        .try_into()
        .map_err(|e| D::Error::custom(format!("ftl.combined: {e}")))
}

impl FtlSection {
    /// The scheme this section selects, with its settings.
    pub fn scheme_config(&self) -> SchemeConfig {
        match self.scheme {
            FtlScheme::Page => SchemeConfig::Page(self.page),
            FtlScheme::Block => SchemeConfig::Block(self.block),
            FtlScheme::Gftl => SchemeConfig::Gftl(self.gftl),
            FtlScheme::Rftl => SchemeConfig::Rftl(self.rftl),
            FtlScheme::DftlPor => SchemeConfig::DftlPor(self.dftl_por),
            FtlScheme::Spftl => SchemeConfig::Spftl(self.spftl),
            FtlScheme::SpftlLog => SchemeConfig::SpftlLog(self.spftl_log),
            FtlScheme::Combined => SchemeConfig::Combined(self.combined),
        }
    }
}
