//! Driver versions: the integer the driver reports (12020) and what it means (12.2).

use core::fmt;

/// A CUDA driver (or ABI) version, as `cuDriverGetVersion` encodes it:
/// `1000 * major + 10 * minor` — 12020 is CUDA 12.2.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DriverVersion(u32);

impl DriverVersion {
    /// The version from the driver's encoding (12020 is 12.2).
    #[inline]
    pub const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// The version `major.minor`.
    #[inline]
    pub const fn new(major: u32, minor: u32) -> Self {
        Self(major * 1000 + minor * 10)
    }

    /// The driver's encoding of this version.
    #[inline]
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// The major version (12 for 12020).
    #[inline]
    pub const fn major(self) -> u32 {
        self.0 / 1000
    }

    /// The minor version (2 for 12020).
    #[inline]
    pub const fn minor(self) -> u32 {
        (self.0 % 1000) / 10
    }
}

impl fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major(), self.minor())
    }
}

impl fmt::Debug for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DriverVersion({self} = {})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::DriverVersion;

    #[test]
    fn decodes_the_driver_encoding() {
        let v = DriverVersion::from_raw(12020);
        assert_eq!((v.major(), v.minor()), (12, 2));
        assert_eq!(v.to_string(), "12.2");
        assert_eq!(DriverVersion::from_raw(3020).to_string(), "3.2");
        assert_eq!(DriverVersion::from_raw(12090).to_string(), "12.9");
        assert_eq!(DriverVersion::from_raw(11040).to_string(), "11.4");
        assert_eq!(DriverVersion::new(12, 9), DriverVersion::from_raw(12090));
        assert!(DriverVersion::new(12, 3) > DriverVersion::new(12, 2));
    }
}

static_assertions::assert_impl_all!(DriverVersion: Send, Sync, Copy);
