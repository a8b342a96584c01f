//! Policies of your own, by name: a [`Registry`] maps the names a configuration gives
//! (`victim = "oldest-first"`, `placement = "by-address"`) to constructors of objects that
//! implement [`VictimPolicy`] or [`Placement`] outside this crate. The built-in names
//! always resolve; a registered name must not shadow one.
//!
//! There is no global registry (the core keeps no global state): the registry goes with
//! the call that builds a volume ([`PageFtl::format_in`](crate::PageFtl::format_in),
//! [`SchemeConfig::format_in`](crate::SchemeConfig::format_in) and their mounts), and the
//! simulator and sweeps carry one from their callers.

use super::{Placement, PlacementKind};
use crate::victim::{VictimKind, VictimPolicy};
use crate::FtlError;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest policy name, in bytes.
pub const MAX_POLICY_NAME: usize = 32;

/// A policy's name: 1 to [`MAX_POLICY_NAME`] bytes of lowercase ASCII letters, digits and
/// `-` (kept inline so configurations stay `Copy`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PolicyName {
    len: u8,
    bytes: [u8; MAX_POLICY_NAME],
}

impl PolicyName {
    /// `name` if it is a valid policy name.
    pub fn new(name: &str) -> Result<PolicyName, FtlError> {
        let ok = !name.is_empty()
            && name.len() <= MAX_POLICY_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(FtlError::Config(format!(
                "policy name {name:?}: 1 to {MAX_POLICY_NAME} lowercase letters, digits or '-'"
            )));
        }
        let mut bytes = [0u8; MAX_POLICY_NAME];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        Ok(PolicyName {
            len: name.len() as u8,
            bytes,
        })
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        // (Built from a `&str` of ASCII only.)
        core::str::from_utf8(&self.bytes[..self.len as usize]).expect("ASCII")
    }
}

impl fmt::Debug for PolicyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for PolicyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for PolicyName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PolicyName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        PolicyName::new(&s).map_err(serde::de::Error::custom)
    }
}

/// The by-name parts of a policy-kind enum that has a `BUILTIN` table of (name, kind) and
/// a `Named(PolicyName)` variant: `builtin_named`, `name`, and (de)serialisation as the
/// name (a built-in one, else any valid name, resolved later by a [`Registry`]).
macro_rules! named_kind {
    ($kind:ident) => {
        impl $kind {
            /// The built-in policy of this name.
            pub fn builtin_named(name: &str) -> Option<$kind> {
                Self::BUILTIN.iter().find(|b| b.0 == name).map(|b| b.1)
            }

            /// The name configurations give.
            pub fn name(&self) -> &str {
                match self {
                    $kind::Named(n) => n.as_str(),
                    k => {
                        Self::BUILTIN
                            .iter()
                            .find(|b| b.1 == *k)
                            .expect("built in")
                            .0
                    }
                }
            }
        }

        impl serde::Serialize for $kind {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $kind {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <alloc::string::String as serde::Deserialize>::deserialize(d)?;
                match $kind::builtin_named(&s) {
                    Some(k) => Ok(k),
                    None => $crate::policy::PolicyName::new(&s)
                        .map($kind::Named)
                        .map_err(serde::de::Error::custom),
                }
            }
        }
    };
}
pub(crate) use named_kind;

/// Makes a victim policy.
pub type VictimFactory = fn() -> Box<dyn VictimPolicy>;
/// Makes a placement policy (a fresh one per volume: placements may keep state).
pub type PlacementFactory = fn() -> Box<dyn Placement>;

/// Policies beyond the built-in ones, by name. `Registry::default()` has none: it resolves
/// the built-in names only.
#[derive(Clone, Default)]
pub struct Registry {
    victims: Vec<(PolicyName, VictimFactory)>,
    placements: Vec<(PolicyName, PlacementFactory)>,
}

/// Two registries are equal when they register the same names (the constructors are not
/// compared).
impl PartialEq for Registry {
    fn eq(&self, other: &Registry) -> bool {
        let names = |r: &Registry| {
            (
                r.victims.iter().map(|v| v.0).collect::<Vec<_>>(),
                r.placements.iter().map(|p| p.0).collect::<Vec<_>>(),
            )
        };
        names(self) == names(other)
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field(
                "victims",
                &self.victims.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field(
                "placements",
                &self.placements.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Registry {
    /// An empty registry (the built-in names only).
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Registers a victim policy as `name`; an invalid name, a built-in one or one
    /// registered already is an error.
    pub fn register_victim(&mut self, name: &str, make: VictimFactory) -> Result<(), FtlError> {
        let n = PolicyName::new(name)?;
        if VictimKind::builtin_named(name).is_some() || self.victims.iter().any(|v| v.0 == n) {
            return Err(FtlError::Config(format!(
                "victim policy {name:?} is taken (built in or registered)"
            )));
        }
        self.victims.push((n, make));
        Ok(())
    }

    /// Registers a placement policy as `name` (errors as for victims).
    pub fn register_placement(
        &mut self,
        name: &str,
        make: PlacementFactory,
    ) -> Result<(), FtlError> {
        let n = PolicyName::new(name)?;
        if PlacementKind::builtin_named(name).is_some() || self.placements.iter().any(|p| p.0 == n)
        {
            return Err(FtlError::Config(format!(
                "placement policy {name:?} is taken (built in or registered)"
            )));
        }
        self.placements.push((n, make));
        Ok(())
    }

    /// The victim policy `kind` names.
    pub fn victim(&self, kind: VictimKind) -> Result<Box<dyn VictimPolicy>, FtlError> {
        match kind {
            VictimKind::Named(n) => self
                .victims
                .iter()
                .find(|v| v.0 == n)
                .map(|v| (v.1)())
                .ok_or_else(|| unknown("victim", n, self.victims.iter().map(|v| v.0))),
            builtin => Ok(builtin.builtin().expect("a built-in kind")),
        }
    }

    /// The placement policy `kind` names.
    pub fn placement(&self, kind: PlacementKind) -> Result<Box<dyn Placement>, FtlError> {
        match kind {
            PlacementKind::Named(n) => self
                .placements
                .iter()
                .find(|p| p.0 == n)
                .map(|p| (p.1)())
                .ok_or_else(|| unknown("placement", n, self.placements.iter().map(|p| p.0))),
            builtin => Ok(builtin.builtin().expect("a built-in kind")),
        }
    }
}

fn unknown(what: &str, n: PolicyName, known: impl Iterator<Item = PolicyName>) -> FtlError {
    let known: Vec<String> = known.map(|k| format!("{k:?}")).collect();
    FtlError::Config(format!(
        "{what} policy {n:?} is neither built in nor registered (registered: {})",
        if known.is_empty() {
            "none".into()
        } else {
            known.join(", ")
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::victim::Greedy;

    #[test]
    fn names_resolve_built_in_first_then_registered() {
        let mut r = Registry::new();
        assert!(r.victim(VictimKind::Greedy).is_ok());
        let mine = VictimKind::Named(PolicyName::new("mine").unwrap());
        let e = r.victim(mine).err().expect("not registered yet");
        assert!(format!("{e}").contains("registered: none"), "{e}");
        r.register_victim("mine", || Box::new(Greedy)).unwrap();
        assert_eq!(r.victim(mine).unwrap().name(), "greedy");
        // Taken names and bad names are refused.
        assert!(r.register_victim("mine", || Box::new(Greedy)).is_err());
        assert!(r
            .register_victim("cost-benefit", || Box::new(Greedy))
            .is_err());
        assert!(PolicyName::new("").is_err());
        assert!(PolicyName::new("Upper").is_err());
        assert!(PolicyName::new(&"x".repeat(MAX_POLICY_NAME + 1)).is_err());
        assert_eq!(
            PolicyName::new(&"x".repeat(MAX_POLICY_NAME))
                .unwrap()
                .as_str()
                .len(),
            MAX_POLICY_NAME
        );
        // A registry compares by the names it holds.
        assert_ne!(r, Registry::new());
    }

    #[test]
    fn kinds_print_and_parse_their_names() {
        for k in [
            VictimKind::Greedy,
            VictimKind::CostBenefit,
            VictimKind::ApWeighted,
            VictimKind::Named(PolicyName::new("oldest-first").unwrap()),
        ] {
            assert_eq!(
                VictimKind::builtin_named(k.name())
                    .unwrap_or(VictimKind::Named(PolicyName::new(k.name()).unwrap())),
                k
            );
        }
        assert_eq!(PlacementKind::MsbCritical.name(), "msb-critical");
        assert!(PlacementKind::Named(PolicyName::new("x").unwrap())
            .builtin()
            .is_none());
    }
}
