//! The names states and kinds are stored and shown by, for the enums that have them.

/// The text of a state in the database, and back: an unknown one is an error, never a
/// default.
macro_rules! state_names {
    ($ty:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }

            pub fn parse(s: &str) -> Option<$ty> {
                match s {
                    $($name => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }

        impl TryFrom<String> for $ty {
            type Error = $crate::Error;

            fn try_from(s: String) -> Result<$ty, $crate::Error> {
                $ty::parse(&s).ok_or_else(|| $crate::Error::invalid(format!("unknown {} {s:?}", stringify!($ty))))
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        /// As its name, the way the database stores it and pages show it.
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

pub(crate) use state_names;
