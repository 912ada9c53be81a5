//! The workspace as `cargo metadata --no-deps` describes it: members, targets, direct dependencies.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::cmd::Cmd;

/// The workspace members and where they build to.
#[derive(Debug, Clone)]
pub(crate) struct Workspace {
    pub target_directory: PathBuf,
    pub packages: Vec<Package>,
}

/// One workspace member.
#[derive(Debug, Clone)]
pub(crate) struct Package {
    pub name: String,
    pub has_lib: bool,
    pub dependencies: Vec<Dependency>,
}

/// A direct dependency as the manifest declares it (after workspace inheritance).
#[derive(Debug, Clone)]
pub(crate) struct Dependency {
    /// The package name, not the name it is imported under.
    pub name: String,
    pub kind: DepKind,
    pub uses_default_features: bool,
    pub features: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DepKind {
    Normal,
    Build,
    Dev,
}

impl Workspace {
    pub(crate) fn load() -> Result<Workspace> {
        let json = Cmd::cargo()
            .args(["metadata", "--no-deps", "--format-version", "1"])
            .read()?;
        Workspace::parse(&json).context("cannot read the output of `cargo metadata`")
    }

    pub(crate) fn parse(json: &str) -> Result<Workspace> {
        let root: Value = serde_json::from_str(json)?;
        let target_directory = root["target_directory"]
            .as_str()
            .context("no target_directory")?
            .into();
        let packages = root["packages"]
            .as_array()
            .context("no packages")?
            .iter()
            .map(Package::parse)
            .collect::<Result<_>>()?;
        Ok(Workspace {
            target_directory,
            packages,
        })
    }

    /// The claij library crates (the front door `claij` and `claij-*` with a lib target), in name
    /// order.
    pub(crate) fn library_crates(&self) -> Vec<&Package> {
        let mut libs: Vec<&Package> = self
            .packages
            .iter()
            .filter(|p| (p.name == "claij" || p.name.starts_with("claij-")) && p.has_lib)
            .collect();
        libs.sort_by(|a, b| a.name.cmp(&b.name));
        libs
    }

    pub(crate) fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }
}

impl Package {
    fn parse(package: &Value) -> Result<Package> {
        let name = package["name"].as_str().context("package without a name")?;
        let lib_kinds = ["lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro"];
        let has_lib = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|target| target["kind"].as_array().into_iter().flatten())
            .any(|kind| kind.as_str().is_some_and(|k| lib_kinds.contains(&k)));
        let dependencies = package["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(Dependency::parse)
            .collect::<Result<_>>()
            .with_context(|| format!("in package {name}"))?;
        Ok(Package {
            name: name.to_owned(),
            has_lib,
            dependencies,
        })
    }

    /// Dependencies that end up in the built crate: normal and build, not dev.
    pub(crate) fn non_dev_dependencies(&self) -> impl Iterator<Item = &Dependency> {
        self.dependencies.iter().filter(|d| d.kind != DepKind::Dev)
    }
}

impl Dependency {
    fn parse(dep: &Value) -> Result<Dependency> {
        let name = dep["name"].as_str().context("dependency without a name")?;
        let kind = match dep["kind"].as_str() {
            None => DepKind::Normal,
            Some("build") => DepKind::Build,
            Some(_) => DepKind::Dev,
        };
        let features = dep["features"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect();
        Ok(Dependency {
            name: name.to_owned(),
            kind,
            uses_default_features: dep["uses_default_features"].as_bool().unwrap_or(true),
            features,
        })
    }
}
